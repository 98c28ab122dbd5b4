"""ts-payment-service: the outside payment over ts-payment-mongo (FudanSELab/train-ticket
ts-payment-service `service/PaymentServiceImpl.java` pay: `Pay Success` for an order not yet paid
here, `Pay Failed, order not found with order id<id>` (sic) for one that was)."""

from spring import bad, find, find_one, ok, repo, save, uuid

MONGO = "ts-payment-mongo"


def welcome(ctx, request):
    return "Welcome to [ Payment Service ] !"


def pay(ctx, request):
    info = dict(request["body"] or {})
    coll = repo(ctx, MONGO, "payment")
    if find_one(ctx, coll, {"orderId": info.get("orderId")}):
        return bad("Pay Failed, order not found with order id" + str(info.get("orderId")))
    info["id"] = uuid(ctx, "payment")
    save(ctx, coll, info)
    return ok(None, "Pay Success")


def query(ctx, request):
    found = find(ctx, repo(ctx, MONGO, "payment"))
    return ok(found, "Query Success") if found else bad("No Content")
