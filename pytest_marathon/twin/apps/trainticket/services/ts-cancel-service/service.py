"""ts-cancel-service: cancelling an order (FudanSELab/train-ticket ts-cancel-service
`service/CancelServiceImpl.java` cancelOrder / calculateRefund): the order from ts-order-service,
else ts-order-other-service; NOTPAID, PAID and CHANGE may be cancelled (`Order Status Cancel Not
Permitted` otherwise); the order is saved as CANCEL, the refund (0.00 unpaid, else 80 % of the
price: the twin's clock has no calendar, so every trip counts as not yet started) is drawn back
through ts-inside-payment-service and the user fetched from ts-user-service."""

from spring import bad, data, ok, rest
from ts import CANCEL, CHANGE, INSIDE_PAYMENT, NOTPAID, ORDER, ORDER_OTHER, PAID, USER

NOT_PERMITTED = "Order Status Cancel Not Permitted"


def welcome(ctx, request):
    return "Welcome to [ Cancel Service ] !"


def refund_of(order):
    if order.get("status") == NOTPAID:
        return "0.00"
    return f"{float(order.get('price') or 0) * 0.8:.2f}"


def find_order(ctx, order_id):
    for base in (ORDER, ORDER_OTHER):
        answer = rest(ctx, "GET", base + "/" + order_id)
        if answer.get("status") == 1:
            return base, answer["data"]
    return None, None


def cancel(ctx, request):
    params = request["params"]
    base, order = find_order(ctx, params["orderId"])
    if order is None:
        return bad("Order Not Found.")
    if order.get("status") not in (NOTPAID, PAID, CHANGE):
        return bad(NOT_PERMITTED)
    order["status"] = CANCEL
    changed = rest(ctx, "PUT", base, order)
    if changed.get("status") != 1:
        return bad(changed.get("msg") if base == ORDER else "Fail.Reason:" + str(changed.get("msg")))
    money = refund_of(dict(order, status=PAID if order.get("price") else NOTPAID))
    drawn = data(ctx, "GET", INSIDE_PAYMENT + "/drawback/" + params["loginId"] + "/" + money)
    if drawn and base == ORDER and rest(ctx, "GET", USER + "id/" + str(order.get("accountId"))).get("status") == 0:
        return bad("Cann't find userinfo by user id.")
    return ok(None, "Success.")


def calculate(ctx, request):
    base, order = find_order(ctx, request["params"]["orderId"])
    if order is None:
        return bad("Order Not Found")
    if order.get("status") not in (NOTPAID, PAID):
        return bad("Order Status Cancel Not Permitted, Refound error")
    return ok(refund_of(order), "Success")
