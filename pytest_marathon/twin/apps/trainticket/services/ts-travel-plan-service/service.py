"""ts-travel-plan-service: advanced search (FudanSELab/train-ticket ts-travel-plan-service
`service/TravelPlanServiceImpl.java` getCheapest / getQuickest / getMinStation): the plan from
ts-route-plan-service, each unit's stops as names (ts-station-service namelist) and the left
tickets of both classes (station ids through ticketinfo, then ts-seat-service); `Cannot Find`
when the plan is empty."""

from spring import bad, data, ok
from ts import ROUTE_PLAN, SEAT, STATION, station_id

FIRSTCLASS, SECONDCLASS = 2, 3


def welcome(ctx, request):
    return "Welcome to [ TravelPlan Service ] !"


def rest_tickets(ctx, date, trip_id, start, end, seat_type):
    seat = {"destStation": station_id(ctx, end), "startStation": station_id(ctx, start), "trainNumber": trip_id,
            "travelDate": date, "seatType": seat_type}
    return data(ctx, "POST", SEAT + "/left_tickets", seat)


def plan(ctx, request, kind):
    info = request["body"] or {}
    units = data(ctx, "POST", ROUTE_PLAN + kind, {"formStationName": info.get("startingPlace"),
                                                  "toStationName": info.get("endPlace"),
                                                  "travelDate": info.get("departureTime"), "num": 5}) or []
    if not units:
        return bad("Cannot Find")
    out = []
    for unit in units:
        stops = data(ctx, "POST", STATION + "/namelist", unit["stopStations"]) or []
        first = rest_tickets(ctx, info.get("departureTime"), unit["tripId"], unit["fromStationName"],
                             unit["toStationName"], FIRSTCLASS)
        second = rest_tickets(ctx, info.get("departureTime"), unit["tripId"], unit["fromStationName"],
                              unit["toStationName"], SECONDCLASS)
        out.append(dict(unit, stopStations=stops, numberOfRestTicketFirstClass=first,
                        numberOfRestTicketSecondClass=second))
    return ok(out)


def cheapest(ctx, request):
    return plan(ctx, request, "cheapestRoute")


def quickest(ctx, request):
    return plan(ctx, request, "quickestRoute")


def min_station(ctx, request):
    return plan(ctx, request, "minStopStations")
