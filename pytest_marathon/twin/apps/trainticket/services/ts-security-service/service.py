"""ts-security-service: the booking guard (FudanSELab/train-ticket ts-security-service
`service/SecurityServiceImpl.java` check): the orders of the last hour and the valid orders from
ts-order-service and ts-order-other-service against the `max_order_1_hour` and
`max_order_not_use` configs in ts-security-mongo (both Integer.MAX_VALUE in `init/InitData.java`)."""

from spring import JavaError, bad, data, find, find_one, ok, repo
from ts import ORDER, ORDER_OTHER

MONGO = "ts-security-mongo"


def welcome(ctx, request):
    return "welcome to [Security Service]"


def check(ctx, request):
    account = request["params"]["accountId"]
    today = "2013-05-04"
    mine = data(ctx, "GET", ORDER + "/security/" + today + "/" + account) or {}
    other = data(ctx, "GET", ORDER_OTHER + "/security/" + today + "/" + account) or {}
    coll = repo(ctx, MONGO, "security_config")
    hour, valid = find_one(ctx, coll, {"name": "max_order_1_hour"}), find_one(ctx, coll, {"name": "max_order_not_use"})
    if hour is None or valid is None:
        raise JavaError("java.lang.NullPointerException")
    in_hour = mine.get("orderNumInLastOneHour", 0) + other.get("orderNumInLastOneHour", 0)
    total = mine.get("orderNumOfValidOrder", 0) + other.get("orderNumOfValidOrder", 0)
    if in_hour > int(hour["value"]) or total > int(valid["value"]):
        return bad("Too much order in last one hour or too much valid order", account)
    return ok(account, "Success.r")


def find_all(ctx, request):
    found = find(ctx, repo(ctx, MONGO, "security_config"))
    return ok(found) if found else bad("No Content")
