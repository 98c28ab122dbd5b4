"""ts-station-service: station names and ids over ts-station-mongo (FudanSELab/train-ticket
ts-station-service `controller/StationController.java`, `service/StationServiceImpl.java`
queryForId / queryById / query; `init/InitData.java` seeds the 13 stations)."""

from spring import bad, find, find_one, ok, repo

MONGO = "ts-station-mongo"  # application.yml spring.data.mongodb.host


def stations(ctx):
    return repo(ctx, MONGO, "station")


def welcome(ctx, request):
    return "Welcome to [ Station Service ] !"


def query_for_id(ctx, request):
    name = request["params"]["stationNameForId"]
    station = find_one(ctx, stations(ctx), {"name": name})
    return ok(station["id"]) if station else bad("Not exists", name)


def query_by_id(ctx, request):
    sid = request["params"]["stationIdForName"]
    station = find_one(ctx, stations(ctx), {"id": sid})
    return ok(station["name"]) if station else bad("No that stationId", sid)


def query_all(ctx, request):
    found = find(ctx, stations(ctx))
    return ok(found, "Find all content") if found else bad("No content")


def query_names(ctx, request):
    """queryByIdBatch: names of the ids given (`No stationNamelist according to stationIdList`)."""
    names = []
    for sid in request["body"] or []:
        station = find_one(ctx, stations(ctx), {"id": sid})
        if station:
            names.append(station["name"])
    return ok(names) if names else bad("No stationNamelist according to stationIdList", names)
