"""ts-order-service and ts-order-other-service (FudanSELab/train-ticket
`service/OrderServiceImpl.java` / `OrderOtherServiceImpl.java`): orders in Mongo
(`ts-order-mongo`, `ts-order-other-mongo`, collection `orders`). Texts as upstream:
create `Order already exist` / `Add new Order Success`, getOrderById `Order Not Found`,
queryOrdersForRefresh `Query Orders For Refresh Success` (with station names from
ts-station-service's namelist... here one name per id), getSoldTickets `Get order num`,
modifyOrder `Order Not Found, Can't update` / `Modify Order Success`, checkSecurityAboutOrder
`Check Security Success . `."""

from spring import bad, find, find_one, mongo_op, ok, repo, save

NOT_FOUND = "Order Not Found"
VALID = (0, 1, 2)  # NOTPAID, PAID, COLLECTED


def orders(ctx, mongo):
    return repo(ctx, mongo, "orders")


def create(ctx, request, mongo):
    order = dict(request["body"] or {})
    coll = orders(ctx, mongo)
    if find_one(ctx, coll, {"accountId": order.get("accountId"), "trainNumber": order.get("trainNumber"),
                            "travelDate": order.get("travelDate"), "seatNumber": order.get("seatNumber")}):
        return bad("Order already exist")
    save(ctx, coll, order)
    return ok(order, "Add new Order Success")


def retrieve(ctx, request, mongo):
    order = find_one(ctx, orders(ctx, mongo), {"id": request["params"]["orderId"]})
    return ok(order, "Success.") if order else bad(NOT_FOUND)


def refresh(ctx, request, mongo):
    info = request["body"] or {}
    found = find(ctx, orders(ctx, mongo), {"accountId": info.get("loginId")})
    return ok(found, "Query Orders For Refresh Success")


def sold_tickets(ctx, request, mongo):
    seat = request["body"] or {}
    found = find(ctx, orders(ctx, mongo), {"trainNumber": seat.get("trainNumber"), "travelDate": seat.get("travelDate")})
    sold = [{"seatNo": int(o.get("seatNumber") or 0), "startStation": o.get("from"), "destStation": o.get("to")}
            for o in found if o.get("status") in VALID]
    return ok({"travelDate": seat.get("travelDate"), "trainNumber": seat.get("trainNumber"), "soldTickets": sold})


def sold_count(ctx, request, mongo):
    params = request["params"]
    found = find(ctx, orders(ctx, mongo), {"trainNumber": params["trainNumber"], "travelDate": params["travelDate"]})
    counts = {"travelDate": params["travelDate"], "trainNumber": params["trainNumber"], "noSeat": 0,
              "businessSeat": 0, "firstClassSeat": 0, "secondClassSeat": 0, "hardSeat": 0, "softSeat": 0,
              "hardBed": 0, "softBed": 0, "highSoftBed": 0}
    for order in found:
        key = {2: "firstClassSeat", 3: "secondClassSeat"}.get(order.get("seatClass"))
        if key:
            counts[key] = counts[key] + 1
    return ok(counts)


def modify_status(ctx, request, mongo):
    params = request["params"]
    coll = orders(ctx, mongo)
    order = find_one(ctx, coll, {"id": params["orderId"]})
    if order is None:
        return bad(NOT_FOUND)
    order["status"] = int(params["status"])
    save(ctx, coll, order)
    return ok(order, "Modify Order Success")


def update(ctx, request, mongo):
    order = dict(request["body"] or {})
    coll = orders(ctx, mongo)
    if find_one(ctx, coll, {"id": order.get("id")}) is None:
        return bad("Order Not Found, Can't update")
    save(ctx, coll, order)
    return ok(order, "Success")


def security(ctx, request, mongo):
    """checkSecurityAboutOrder: the account's valid orders (the twin counts them in the server; the
    last hour's count is 0, the twin's clock having no calendar)."""
    coll = orders(ctx, mongo)
    valid = mongo_op(ctx, coll.count, {"accountId": request["params"]["accountId"], "status": {"$in": list(VALID)}})
    return ok({"orderNumInLastOneHour": 0, "orderNumOfValidOrder": valid}, "Check Security Success . ")


def price(ctx, request, mongo):
    order = find_one(ctx, orders(ctx, mongo), {"id": request["params"]["orderId"]})
    return ok(order["price"]) if order else bad(NOT_FOUND, "-1.0")


def query_all(ctx, request, mongo):
    return ok(find(ctx, orders(ctx, mongo)), "Success.")
