"""Train Ticket's in-cluster addresses, hard-coded in each upstream `*ServiceImpl.java`
(`http://ts-<svc>:<port>/api/v1/...`, FudanSELab/train-ticket), and the lookups several
services make the same way (station id through ticketinfo -> basic -> station, TravelServiceImpl
`queryForStationId`)."""

from spring import data, rest

TICKETINFO = "http://ts-ticketinfo-service:15681/api/v1/ticketinfoservice/ticketinfo"
BASIC = "http://ts-basic-service:15680/api/v1/basicservice/basic"
STATION = "http://ts-station-service:12345/api/v1/stationservice/stations"
TRAIN = "http://ts-train-service:14567/api/v1/trainservice/trains/"
ROUTE = "http://ts-route-service:11178/api/v1/routeservice/routes/"
PRICE = "http://ts-price-service:16579/api/v1/priceservice/prices/"
CONFIG = "http://ts-config-service:15679/api/v1/configservice/configs/"
SEAT = "http://ts-seat-service:18898/api/v1/seatservice/seats"
ORDER = "http://ts-order-service:12031/api/v1/orderservice/order"
ORDER_OTHER = "http://ts-order-other-service:12032/api/v1/orderOtherService/orderOther"
TRAVEL = "http://ts-travel-service:12346/api/v1/travelservice"
TRAVEL2 = "http://ts-travel2-service:16346/api/v1/travel2service"
SECURITY = "http://ts-security-service:11188/api/v1/securityservice/securityConfigs/"
CONTACTS = "http://ts-contacts-service:12347/api/v1/contactservice/contacts/"
ASSURANCE = "http://ts-assurance-service:18888/api/v1/assuranceservice/assurances/"
FOOD = "http://ts-food-service:18856/api/v1/foodservice/orders"
FOOD_MAP = "http://ts-food-map-service:18855/api/v1/foodmapservice/"
CONSIGN = "http://ts-consign-service:16111/api/v1/consignservice/consigns"
CONSIGN_PRICE = "http://ts-consign-price-service:16110/api/v1/consignpriceservice/consignprice/"
USER = "http://ts-user-service:12342/api/v1/userservice/users/"
AUTH = "http://ts-auth-service:12340/api/v1/auth"
VERIFY = "http://ts-verification-code-service:15678/api/v1/verifycode/verify/"
INSIDE_PAYMENT = "http://ts-inside-payment-service:18673/api/v1/inside_pay_service/inside_payment"
PAYMENT = "http://ts-payment-service:19001/api/v1/paymentservice/payment"
NOTIFY = "http://ts-notification-service:17853/api/v1/notifyservice/notification/"
ROUTE_PLAN = "http://ts-route-plan-service:14578/api/v1/routeplanservice/routePlan/"

NOTPAID, PAID, COLLECTED, CHANGE, CANCEL, REFUND, USED = 0, 1, 2, 3, 4, 5, 6  # OrderStatus


def is_high_speed(trip_id):
    """G and D trains live in travel/order, the others in travel2/order-other."""
    return str(trip_id).startswith("G") or str(trip_id).startswith("D")


def order_url(trip_id):
    return ORDER if is_high_speed(trip_id) else ORDER_OTHER


def station_id(ctx, name):
    """queryForStationId: ticketinfo -> basic -> station."""
    return data(ctx, "GET", TICKETINFO + "/" + name)


def route_of(ctx, route_id):
    answer = rest(ctx, "GET", ROUTE + route_id)
    return answer.get("data") if answer.get("status") == 1 else {"stations": [], "distances": []}
