"""ts-price-service: price rates per route and train type over ts-price-mongo
(FudanSELab/train-ticket ts-price-service `service/PriceServiceImpl.java`
findByRouteIdAndTrainType: `Response(0, "No that config", null)` when none; `init/InitData.java`)."""

from spring import bad, find, find_one, ok, repo

MONGO = "ts-price-mongo"


def welcome(ctx, request):
    return "Welcome to [ Price Service ] !"


def query(ctx, request):
    params = request["params"]
    config = find_one(ctx, repo(ctx, MONGO, "price_config"),
                      {"routeId": params["routeId"], "trainType": params["trainType"]})
    return ok(config, "Success") if config else bad("No that config")


def query_all(ctx, request):
    found = find(ctx, repo(ctx, MONGO, "price_config"))
    return ok(found, "Success") if found else bad("No price config")
