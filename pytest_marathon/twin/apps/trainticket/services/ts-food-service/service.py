"""ts-food-service: food orders over ts-food-mongo and the food on offer for a trip
(FudanSELab/train-ticket ts-food-service `service/FoodServiceImpl.java`: createFoodOrder
`Order Id Has Existed.` / `Success.`; getAllFood asks ts-food-map-service for the trip's train
food, ts-travel-service for the route and ts-station-service's id of each end, then the stores
of each station on the way)."""

from spring import bad, data, find_one, ok, repo, save, uuid
from ts import FOOD_MAP, STATION, TRAVEL

MONGO = "ts-food-mongo"


def welcome(ctx, request):
    return "Welcome to [ Food Service ] !"


def create(ctx, request):
    order = dict(request["body"] or {})
    coll = repo(ctx, MONGO, "foodorder")
    if find_one(ctx, coll, {"orderId": order.get("orderId")}):
        return bad("Order Id Has Existed.")
    order["id"] = uuid(ctx, "food")
    save(ctx, coll, order)
    return ok(order, "Success.")


def get_all_food(ctx, request):
    params = request["params"]
    trip_id = params["tripId"]
    if len(trip_id) <= 2:
        return bad("Trip id is not suitable")
    train_food = data(ctx, "GET", FOOD_MAP + "trainfoods/" + trip_id)
    route = data(ctx, "GET", TRAVEL + "/routes/" + trip_id) or {"stations": []}
    start = data(ctx, "GET", STATION + "/id/" + params["startStation"])
    end = data(ctx, "GET", STATION + "/id/" + params["endStation"])
    stores = {}
    stations = route["stations"]
    if start in stations and end in stations:
        for sid in stations[stations.index(start):stations.index(end) + 1]:
            stores[sid] = data(ctx, "GET", FOOD_MAP + "foodstores/" + sid) or []
    return ok({"trainFoodList": train_food or [], "foodStoreListMap": stores}, "Get All Food Success")
