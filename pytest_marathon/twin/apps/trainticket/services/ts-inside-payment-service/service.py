"""ts-inside-payment-service: the in-app wallet over ts-inside-payment-mongo
(FudanSELab/train-ticket ts-inside-payment-service `service/InsidePaymentServiceImpl.java` pay:
the order from ts-order-service (G/D) or ts-order-other-service; only NOTPAID may be paid (`Error.
Order status Not allowed to Pay.`); when the wallet's top-ups do not cover all payments plus this
one, ts-payment-service pays from outside; the order is then set PAID and the payment saved;
`Payment Failed, Order Not Exists` when the order service has none. drawBack adds a top-up of
type D. `init/InitData.java` tops up fdse_microservice with 10000)."""

from spring import bad, find, ok, repo, rest, save, uuid
from ts import NOTPAID, PAID, PAYMENT, order_url

MONGO = "ts-inside-payment-mongo"


def welcome(ctx, request):
    return "Welcome to [ InsidePayment Service ] !"


def pay(ctx, request):
    info = request["body"] or {}
    base = order_url(str(info.get("tripId")))
    order_answer = rest(ctx, "GET", base + "/" + str(info.get("orderId")))
    if order_answer.get("status") != 1:
        return bad("Payment Failed, Order Not Exists")
    order = order_answer["data"]
    if order.get("status") != NOTPAID:
        ctx.log("info", "[Inside Payment Service][Pay] Error. Order status Not allowed to Pay.")
        return bad("Error. Order status Not allowed to Pay.")
    user = info.get("userId")
    payments, money = repo(ctx, MONGO, "payment"), repo(ctx, MONGO, "addMoney")
    spent = sum(float(p.get("price") or 0) for p in find(ctx, payments, {"userId": user})) + float(order.get("price") or 0)
    have = sum(float(m.get("money") or 0) for m in find(ctx, money, {"userId": user}))
    payment = {"id": uuid(ctx, "payment"), "orderId": info.get("orderId"), "price": order.get("price"), "userId": user}
    if spent > have:
        outside = rest(ctx, "POST", PAYMENT, {"orderId": info.get("orderId"), "userId": user, "price": order.get("price")})
        ctx.log("info", "Out pay result: " + str(outside))
        if outside.get("status") != 1:
            return bad("Payment Failed:  " + str(outside.get("msg")))
        payment["type"] = "O"
        save(ctx, payments, payment)
        rest(ctx, "GET", base + "/status/" + str(info.get("orderId")) + "/" + str(PAID))
        return ok(None, "Payment Success " + str(outside.get("msg")))
    rest(ctx, "GET", base + "/status/" + str(info.get("orderId")) + "/" + str(PAID))
    payment["type"] = "P"
    save(ctx, payments, payment)
    return ok(None, "Payment Success")


def drawback(ctx, request):
    params = request["params"]
    money = {"id": uuid(ctx, "drawback"), "userId": params["userId"], "money": params["money"], "type": "D"}
    save(ctx, repo(ctx, MONGO, "addMoney"), money)
    return ok(None, "Draw Back Money Success")


def query_account(ctx, request):
    return ok(find(ctx, repo(ctx, MONGO, "addMoney")), "Success")
