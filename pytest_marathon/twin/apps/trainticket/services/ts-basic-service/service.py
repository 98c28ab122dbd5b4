"""ts-basic-service: a trip's price for a leg (FudanSELab/train-ticket ts-basic-service
`service/BasicServiceImpl.java` queryForTravel: both stations must exist, then the train type,
the route and the price config; the price is the leg's distance times the rate, and any failure
in that arithmetic falls back to 95.0 / 120.0 as upstream's catch does)."""

from spring import bad, data, ok, relay, rest
from ts import PRICE, ROUTE, STATION, TRAIN


def welcome(ctx, request):
    return "Welcome to [ Basic Service ] !"


def station_answer(ctx, name):
    return rest(ctx, "GET", STATION + "/id/" + name)


def query_for_travel(ctx, request):
    info = request["body"] or {}
    trip = info.get("trip") or {}
    status, msg, result = 1, "Success", {"status": True}
    start_ok = station_answer(ctx, info.get("startingPlace", "")).get("status") == 1
    end_ok = station_answer(ctx, info.get("endPlace", "")).get("status") == 1
    if not start_ok or not end_ok:
        status, msg, result["status"] = 0, "Start place or end place not exist!", False
    train = data(ctx, "GET", TRAIN + str(trip.get("trainTypeId")))
    if train is None:
        status, msg, result["status"] = 0, "Train type doesn't exist", False
    else:
        result["trainType"] = train
    route_id = str(trip.get("routeId"))
    route = data(ctx, "GET", ROUTE + route_id)
    price = data(ctx, "GET", PRICE + route_id + "/" + (train["id"] if train else ""))
    start_id = station_answer(ctx, info.get("startingPlace", "")).get("data")
    end_id = station_answer(ctx, info.get("endPlace", "")).get("data")
    prices = {"economyClass": "95.0", "confortClass": "120.0"}
    if route is not None and price is not None and start_id in route["stations"] and end_id in route["stations"]:
        distances = route["distances"]
        distance = distances[route["stations"].index(end_id)] - distances[route["stations"].index(start_id)]
        prices = {"economyClass": str(float(distance * price["basicPriceRate"])),
                  "confortClass": str(float(distance * price["firstClassPriceRate"]))}
    result["prices"] = prices
    result["percent"] = 1.0
    return ok(result, msg) if status == 1 else bad(msg, result)


def query_for_station_id(ctx, request):
    return relay(ctx, "GET", STATION + "/id/" + request["params"]["stationName"])
