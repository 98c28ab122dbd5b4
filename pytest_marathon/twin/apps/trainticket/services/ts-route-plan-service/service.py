"""ts-route-plan-service: trips ranked by price or duration (FudanSELab/train-ticket
ts-route-plan-service `service/RoutePlanServiceImpl.java` searchCheapestResult /
searchQuickestResult: trips/left of ts-travel-service and ts-travel2-service, merged and sorted,
at most five, each with its route's stops from the travel service that runs it)."""

from spring import data, ok
from ts import TRAVEL, TRAVEL2, is_high_speed

LIMIT = 5


def welcome(ctx, request):
    return "Welcome to [ RoutePlan Service ] !"


def both(ctx, info):
    query = {"startingPlace": info.get("formStationName"), "endPlace": info.get("toStationName"),
             "departureTime": info.get("travelDate")}
    return (data(ctx, "POST", TRAVEL + "/trips/left", query) or []) + (data(ctx, "POST", TRAVEL2 + "/trips/left", query) or [])


def units(ctx, trips):
    out = []
    for trip in trips[:LIMIT]:
        travel = TRAVEL if is_high_speed(trip["tripId"]) else TRAVEL2
        route = data(ctx, "GET", travel + "/routes/" + trip["tripId"]) or {"stations": []}
        out.append({"tripId": trip["tripId"], "trainTypeId": trip["trainTypeId"],
                    "fromStationName": trip["startingStation"], "toStationName": trip["terminalStation"],
                    "stopStations": route["stations"], "priceForSecondClassSeat": trip["priceForEconomyClass"],
                    "priceForFirstClassSeat": trip["priceForConfortClass"], "startingTime": trip["startingTime"],
                    "endTime": trip["endTime"]})
    return out


def cheapest(ctx, request):
    trips = both(ctx, request["body"] or {})
    trips.sort(key=lambda t: float(t.get("priceForEconomyClass") or 0))
    return ok(units(ctx, trips))


def quickest(ctx, request):
    trips = both(ctx, request["body"] or {})
    trips.sort(key=lambda t: str(t.get("endTime")) + str(t.get("startingTime")))
    return ok(units(ctx, trips))


def min_stops(ctx, request):
    trips = both(ctx, request["body"] or {})
    return ok(units(ctx, trips))
