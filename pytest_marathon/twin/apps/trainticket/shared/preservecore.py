"""ts-preserve-service and ts-preserve-other-service share one booking procedure
(FudanSELab/train-ticket `service/PreserveServiceImpl.java` / `PreserveOtherServiceImpl.java`
preserve): security check, the contact, the trip's detail from travel (or travel2), the two
station ids, ticketinfo's price, a seat from ts-seat-service, the order at ts-order-service (or
order-other), then optional assurance, food and consignment, the user from ts-user-service, and
the notification, whose failure upstream only logs. Its step logs are upstream's."""

from spring import JavaError, bad, data, ok, rest, uuid
from ts import (
    ASSURANCE,
    CONSIGN,
    CONTACTS,
    FOOD,
    NOTIFY,
    SEAT,
    SECURITY,
    TICKETINFO,
    USER,
    station_id,
)

FIRSTCLASS = 2


def preserve(ctx, request, travel_base, order_base):
    oti = request["body"] or {}
    log = ctx.log
    log("info", "[Preserve Service] [Step 1] Check Security")
    checked = rest(ctx, "GET", SECURITY + str(oti.get("accountId")))
    if checked.get("status") == 0:
        return bad(checked.get("msg"))
    log("info", "[Preserve Service] [Step 2] Find contacts")
    contacts = rest(ctx, "GET", CONTACTS + str(oti.get("contactsId")))
    if contacts.get("status") == 0:
        log("info", "[Preserve Service][Get Contacts] Fail. " + str(contacts.get("msg")))
        return bad(contacts.get("msg"))
    log("info", "[Preserve Service] [Step 3] Check tickets num")
    detail_answer = rest(ctx, "POST", travel_base + "/trip_detail",
                         {"from": oti.get("from"), "to": oti.get("to"), "travelDate": oti.get("date"),
                          "tripId": oti.get("tripId")})
    detail = detail_answer.get("data") or {}
    if detail_answer.get("status") == 0:
        return bad(detail_answer.get("msg"))
    trip_response = detail.get("tripResponse")
    if trip_response is None:
        raise_npe()
    first = oti.get("seatType") == FIRSTCLASS
    if first and trip_response.get("confortClass") == 0:
        return bad("Seat Not Enough")
    log("info", "[Preserve Service] [Step 4] Do Order")
    contact = contacts["data"]
    from_id, to_id = station_id(ctx, oti.get("from")), station_id(ctx, oti.get("to"))
    priced = data(ctx, "POST", TICKETINFO, {"trip": detail.get("trip"), "startingPlace": oti.get("from"),
                                            "endPlace": oti.get("to"), "departureTime": oti.get("date")}) or {}
    seat_class = FIRSTCLASS if first else 3
    ticket = data(ctx, "POST", SEAT, {"travelDate": oti.get("date"), "trainNumber": oti.get("tripId"),
                                      "startStation": from_id, "destStation": to_id, "seatType": seat_class}) or {}
    prices = priced.get("prices") or {}
    order = {"id": uuid(ctx, "order"), "trainNumber": oti.get("tripId"), "accountId": oti.get("accountId"),
             "from": from_id, "to": to_id, "boughtDate": ctx.now, "status": 0,
             "contactsDocumentNumber": contact.get("documentNumber"), "contactsName": contact.get("name"),
             "documentType": contact.get("documentType"), "seatClass": seat_class,
             "travelDate": oti.get("date"), "travelTime": trip_response.get("startingTime"),
             "seatNumber": str(ticket.get("seatNo")), "coachNumber": 5,
             "price": prices.get("confortClass" if first else "economyClass")}
    log("info", "[Preserve Service][Order Price] Price is: " + str(order["price"]))
    created = rest(ctx, "POST", order_base, order)
    if created.get("status") == 0:
        log("info", "[Preserve Service][Create Order Fail] Create Order Fail.  Reason: " + str(created.get("msg")))
        return bad(created.get("msg"))
    log("info", "[Preserve Service] [Step 4] Do Order Complete")
    answer = ok(created.get("msg"), "Success.")
    if int(oti.get("assurance") or 0) != 0:
        bought = rest(ctx, "GET", ASSURANCE + str(oti.get("assurance")) + "/" + order["id"])
        if bought.get("status") != 1:
            answer["body"]["msg"] = "Success.But Buy Assurance Fail."
    if int(oti.get("foodType") or 0) != 0:
        food = {"orderId": order["id"], "foodType": oti.get("foodType"), "foodName": oti.get("foodName"),
                "price": oti.get("foodPrice"), "stationName": oti.get("stationName"), "storeName": oti.get("storeName")}
        if rest(ctx, "POST", FOOD, food).get("status") != 1:
            answer["body"]["msg"] = "Success.But Buy Food Fail."
    if oti.get("consigneeName"):
        consign = {"orderId": order["id"], "accountId": order["accountId"], "handleDate": oti.get("handleDate"),
                   "targetDate": order["travelDate"], "from": from_id, "to": to_id,
                   "consignee": oti.get("consigneeName"), "phone": oti.get("consigneePhone"),
                   "weight": oti.get("consigneeWeight"), "within": oti.get("isWithin")}
        if rest(ctx, "POST", CONSIGN, consign).get("status") != 1:
            answer["body"]["msg"] = "Consign Fail."
    user = data(ctx, "GET", USER + "id/" + str(order["accountId"]))
    if user is None:
        raise_npe()
    notify = {"email": user.get("email"), "orderNumber": order["id"], "username": user.get("userName"),
              "startingPlace": from_id, "endPlace": to_id, "seatNumber": order["seatNumber"],
              "price": order["price"], "date": str(ctx.now)}
    try:
        ctx.http("POST", NOTIFY + "preserve_success", notify)
    except ctx.HttpError as err:
        log("error", "[Preserve Service][Send Email] Exception: " + err.message)
    return answer


def raise_npe():
    """What upstream's dereference of a missing trip or user throws."""
    raise JavaError("java.lang.NullPointerException")
