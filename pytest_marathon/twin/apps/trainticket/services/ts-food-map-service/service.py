"""ts-food-map-service: station food stores and train food over ts-food-map-mongo
(FudanSELab/train-ticket ts-food-map-service `service/FoodMapServiceImpl.java` listTrainFoodByTripId
`No content` when none, getFoodStoresByStationId; `init/InitData.java` reads foods.txt and
foodstores.txt, of which the twin keeps a few rows)."""

from spring import bad, find, ok, repo

MONGO = "ts-food-map-mongo"


def welcome(ctx, request):
    return "Welcome to [ Food store Service ] !"


def train_foods(ctx, request):
    found = find(ctx, repo(ctx, MONGO, "trainfood"), {"tripId": request["params"]["tripId"]})
    return ok(found, "Success") if found else bad("No content")


def food_stores(ctx, request):
    found = find(ctx, repo(ctx, MONGO, "stores"), {"stationId": request["params"]["stationId"]})
    return ok(found, "Success") if found else bad("Food store is empty")


def all_train_foods(ctx, request):
    return ok(find(ctx, repo(ctx, MONGO, "trainfood")), "Success")
