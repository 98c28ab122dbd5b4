"""ts-config-service: named settings over ts-config-mongo (FudanSELab/train-ticket
ts-config-service `service/ConfigServiceImpl.java` query / queryAll; `init/InitData.java` seeds
DirectTicketAllocationProportion 0.5)."""

from spring import bad, find, find_one, ok, repo

MONGO = "ts-config-mongo"


def welcome(ctx, request):
    return "Welcome to [ Config Service ] !"


def retrieve(ctx, request):
    config = find_one(ctx, repo(ctx, MONGO, "config"), {"name": request["params"]["configName"]})
    return ok(config) if config else bad("No content")


def query_all(ctx, request):
    found = find(ctx, repo(ctx, MONGO, "config"))
    return ok(found, "Find all  config success") if found else bad("No content")
