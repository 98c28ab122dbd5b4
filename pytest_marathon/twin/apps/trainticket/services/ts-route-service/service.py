"""ts-route-service: routes (station lists with distances) over ts-route-mongo
(FudanSELab/train-ticket ts-route-service `service/RouteServiceImpl.java` getRouteById /
getAllRoutes; `init/InitData.java` seeds the ten routes)."""

from spring import bad, find, find_one, ok, repo

MONGO = "ts-route-mongo"


def welcome(ctx, request):
    return "Welcome to [ Route Service ] !"


def query_by_id(ctx, request):
    route = find_one(ctx, repo(ctx, MONGO, "routes"), {"id": request["params"]["routeId"]})
    return ok(route) if route else bad("No content with the routeId")


def query_all(ctx, request):
    found = find(ctx, repo(ctx, MONGO, "routes"))
    return ok(found) if found else bad("No Content")
