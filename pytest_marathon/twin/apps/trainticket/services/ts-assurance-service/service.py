"""ts-assurance-service: travel insurance per order over ts-assurance-mongo (FudanSELab/train-ticket
ts-assurance-service `service/AssuranceServiceImpl.java` create: the one type `TRAFFIC_ACCIDENT`
(index 1, 3.0), `Fail.Assurance already exists` for an order that has one; getAllAssuranceTypes)."""

from spring import bad, find, find_one, ok, repo, save, uuid

MONGO = "ts-assurance-mongo"
TYPES = {1: {"index": 1, "name": "Traffic Accident Assurance", "price": 3.0}}  # entity/AssuranceType.java


def welcome(ctx, request):
    return "Welcome to [ Assurance Service ] !"


def types(ctx, request):
    return ok([{"index": t["index"], "name": t["name"], "price": t["price"]} for t in TYPES.values()], "Find All Assurance")


def create(ctx, request):
    params = request["params"]
    kind = TYPES.get(int(params["typeIndex"]))
    coll = repo(ctx, MONGO, "assurance")
    if find_one(ctx, coll, {"orderId": params["orderId"]}):
        return bad("Fail.Assurance already exists")
    if kind is None:
        return bad("Fail.Assurance type doesn't exist")
    assurance = {"id": uuid(ctx, "assurance"), "orderId": params["orderId"], "type": "TRAFFIC_ACCIDENT"}
    save(ctx, coll, assurance)
    return ok(assurance, "Success")


def get_all(ctx, request):
    found = find(ctx, repo(ctx, MONGO, "assurance"))
    return ok(found, "Success") if found else bad("No Content, Assurance is empty")
