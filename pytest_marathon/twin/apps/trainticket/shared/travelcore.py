"""ts-travel-service and ts-travel2-service share one design (FudanSELab/train-ticket
`service/TravelServiceImpl.java` / `Travel2ServiceImpl.java`): trips in their own Mongo
(`ts-travel-mongo`: G and D trains; `ts-travel2-mongo`: Z, T, K), and for a search
(`query`, POST /trips/left) every trip whose route passes the start before the end gets its
tickets: ticketinfo's price, the order service's sold tickets, seat's left tickets of each
class (first, then second) and the train type; the times come from the route's distances at the
train's average speed. `getTripAllDetailInfo` (POST /trip_detail) does the same for one trip.
upstream's `afterToday` check of the date is not modelled (docs/fidelity.md)."""

from spring import bad, data, find, find_one, ok, repo
from ts import SEAT, TICKETINFO, TRAIN, route_of, station_id

FIRSTCLASS, SECONDCLASS = 2, 3  # SeatClass


def trips(ctx, mongo):
    return repo(ctx, mongo, "trip")


def minutes_after(start, minutes):
    """Trip.startingTime plus `minutes` (times are `HH:MM` on upstream's 2013-05-04 placeholder day)."""
    hours, _, mins = str(start).partition(":")
    total = int(hours) * 60 + int(mins or 0) + minutes
    return f"{(total // 60) % 24:02d}:{total % 60:02d}"


def left_tickets(ctx, date, trip_id, start_name, end_name, seat_type):
    """getRestTicketNumber: both station ids again, then seat's left_tickets."""
    seat = {"destStation": station_id(ctx, end_name), "startStation": station_id(ctx, start_name),
            "trainNumber": trip_id, "travelDate": date, "seatType": seat_type}
    return data(ctx, "POST", SEAT + "/left_tickets", seat)


def tickets(ctx, order_base, trip, route, start_id, end_id, start_name, end_name, date):
    """getTickets."""
    travel = {"trip": trip, "startingPlace": start_name, "endPlace": end_name, "departureTime": date}
    priced = data(ctx, "POST", TICKETINFO, travel) or {}
    sold = data(ctx, "GET", order_base + "/" + str(date) + "/" + trip["tripId"]) or {}
    ctx.log("info", "Order info is: Response(status=1, msg=Success, data=" + str(sold) + ")")
    first = left_tickets(ctx, date, trip["tripId"], start_name, end_name, FIRSTCLASS)
    second = left_tickets(ctx, date, trip["tripId"], start_name, end_name, SECONDCLASS)
    stations, distances = route["stations"], route["distances"]
    train = data(ctx, "GET", TRAIN + trip["trainTypeId"])
    speed = train["averageSpeed"]
    start_minutes = 60 * (distances[stations.index(start_id)] - distances[0]) // speed
    end_minutes = 60 * (distances[stations.index(end_id)] - distances[0]) // speed
    prices = priced.get("prices") or {}
    return {"tripId": trip["tripId"], "trainTypeId": trip["trainTypeId"], "startingStation": start_name,
            "terminalStation": end_name, "startingTime": minutes_after(trip["startingTime"], start_minutes),
            "endTime": minutes_after(trip["startingTime"], end_minutes), "economyClass": second,
            "confortClass": first, "priceForEconomyClass": prices.get("economyClass"),
            "priceForConfortClass": prices.get("confortClass")}


def query(ctx, request, mongo, order_base):
    info = request["body"] or {}
    start_name, end_name = info.get("startingPlace", ""), info.get("endPlace", "")
    start_id, end_id = station_id(ctx, start_name), station_id(ctx, end_name)
    found = []
    for trip in find(ctx, trips(ctx, mongo)):
        route = route_of(ctx, trip["routeId"])
        stations = route["stations"]
        if start_id in stations and end_id in stations and stations.index(start_id) < stations.index(end_id):
            found.append(tickets(ctx, order_base, trip, route, start_id, end_id, start_name, end_name,
                                 info.get("departureTime")))
    return ok(found)


def trip_detail(ctx, request, mongo, order_base):
    info = request["body"] or {}
    ctx.log("info", "[TravelService] [TripAllDetailInfo] TripId: " + str(info.get("tripId")))
    trip = find_one(ctx, trips(ctx, mongo), {"tripId": info.get("tripId")})
    if trip is None:
        return ok({"tripResponse": None, "trip": None})
    start_id, end_id = station_id(ctx, info.get("from", "")), station_id(ctx, info.get("to", ""))
    route = route_of(ctx, trip["routeId"])
    if start_id not in route["stations"] or end_id not in route["stations"]:
        return ok({"tripResponse": None, "trip": None})
    response = tickets(ctx, order_base, trip, route, start_id, end_id, info.get("from"), info.get("to"),
                       info.get("travelDate"))
    return ok({"tripResponse": response, "trip": trip})


def route_by_trip(ctx, request, mongo):
    trip_id = request["params"]["tripId"]
    trip = find_one(ctx, trips(ctx, mongo), {"tripId": trip_id})
    if trip is None:
        return bad("No Content according to tripId" + trip_id)
    return ok(route_of(ctx, trip["routeId"]))


def train_type_by_trip(ctx, request, mongo):
    trip_id = request["params"]["tripId"]
    trip = find_one(ctx, trips(ctx, mongo), {"tripId": trip_id})
    if trip is None:
        return bad("No Content according to tripId" + trip_id)
    return ok(data(ctx, "GET", TRAIN + trip["trainTypeId"]))


def retrieve(ctx, request, mongo):
    trip_id = request["params"]["tripId"]
    trip = find_one(ctx, trips(ctx, mongo), {"tripId": trip_id})
    if trip is None:
        return bad("No Content according to tripId" + trip_id)
    return ok(trip, "Search Trip Success by Trip Id " + trip_id)


def query_all(ctx, request, mongo):
    found = find(ctx, trips(ctx, mongo))
    return ok(found) if found else bad("No Content")
