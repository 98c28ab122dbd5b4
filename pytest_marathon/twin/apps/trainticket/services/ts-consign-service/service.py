"""ts-consign-service: luggage consignment over ts-consign-mongo, priced by
ts-consign-price-service (FudanSELab/train-ticket ts-consign-service
`service/ConsignServiceImpl.java` insertConsignRecord: `You have consigned successfully! The
price is <price>`)."""

from spring import bad, data, find, ok, repo, save, uuid
from ts import CONSIGN_PRICE

MONGO = "ts-consign-mongo"


def welcome(ctx, request):
    return "Welcome to [ Consign Service ] !"


def insert(ctx, request):
    consign = dict(request["body"] or {})
    price = data(ctx, "GET", CONSIGN_PRICE + str(consign.get("weight", 0)) + "/" +
                 ("true" if consign.get("within") else "false"))
    record = {"id": uuid(ctx, "consign"), "orderId": consign.get("orderId"), "accountId": consign.get("accountId"),
              "handleDate": consign.get("handleDate"), "targetDate": consign.get("targetDate"),
              "from": consign.get("from"), "to": consign.get("to"), "consignee": consign.get("consignee"),
              "phone": consign.get("phone"), "weight": consign.get("weight"), "price": price}
    save(ctx, repo(ctx, MONGO, "consign_record"), record)
    return ok(record, "You have consigned successfully! The price is " + str(price))


def by_account(ctx, request):
    found = find(ctx, repo(ctx, MONGO, "consign_record"), {"accountId": request["params"]["id"]})
    return ok(found, "Find consign by account id success") if found else bad("No Content according to accountId")
