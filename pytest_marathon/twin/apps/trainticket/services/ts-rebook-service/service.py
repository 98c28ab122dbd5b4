"""ts-rebook-service: changing a paid ticket (FudanSELab/train-ticket ts-rebook-service
`service/RebookServiceImpl.java` rebook): the order (order or order-other by the old trip id), only
PAID may change (upstream's texts for each other status), the new trip's detail from travel or
travel2 with the station names from ts-station-service, `Seat Not Enough`, then the order saved
with the new trip, seat class and date. Upstream also settles the price difference through
ts-inside-payment-service and moves the order between the two order services when the train kind
changes; the twin answers `Success!` without those steps (docs/fidelity.md)."""

from spring import bad, data, ok, rest
from ts import CHANGE, COLLECTED, NOTPAID, PAID, STATION, TRAVEL, TRAVEL2, is_high_speed, order_url

FIRSTCLASS = 2


def welcome(ctx, request):
    return "Welcome to [ Rebook Service ] !"


def rebook(ctx, request):
    info = request["body"] or {}
    base = order_url(str(info.get("oldTripId")))
    found = rest(ctx, "GET", base + "/" + str(info.get("orderId")))
    if found.get("status") != 1:
        return bad("order not found")
    order = found["data"]
    status = order.get("status")
    if status != PAID:
        if status == NOTPAID:
            return bad("you order not suitable to rebook!")
        if status == CHANGE:
            return bad("You have already changed your ticket and you can only change one time.")
        if status == COLLECTED:
            return bad("You have already collected your ticket and you can change it now.")
        return bad("You can't change your ticket.")
    travel = TRAVEL if is_high_speed(info.get("tripId")) else TRAVEL2
    detail = rest(ctx, "POST", travel + "/trip_detail",
                  {"from": data(ctx, "GET", STATION + "/name/" + str(order.get("from"))),
                   "to": data(ctx, "GET", STATION + "/name/" + str(order.get("to"))),
                   "travelDate": info.get("date"), "tripId": info.get("tripId")})
    if detail.get("status") == 0:
        return bad(detail.get("msg"))
    trip = (detail.get("data") or {}).get("tripResponse") or {}
    if info.get("seatType") == FIRSTCLASS and int(trip.get("confortClass") or 0) <= 0:
        return bad("Seat Not Enough")
    order.update({"trainNumber": info.get("tripId"), "seatClass": info.get("seatType"), "travelDate": info.get("date"),
                  "status": CHANGE})
    if rest(ctx, "PUT", base, order).get("status") != 1:
        return bad("Can't update Order!")
    return ok(order, "Success!")
