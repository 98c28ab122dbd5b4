"""ts-execute-service: ticket collection and station entry (FudanSELab/train-ticket
ts-execute-service `serivce/ExecuteServiceImpl.java` ticketCollect: PAID (or CHANGE) -> COLLECTED;
ticketExecute: COLLECTED -> USED; `Order Status Wrong` otherwise, `Order Not Found` when neither
order service has it)."""

from spring import bad, ok, rest
from ts import CHANGE, COLLECTED, ORDER, ORDER_OTHER, PAID, USED

WRONG = "Order Status Wrong"


def welcome(ctx, request):
    return "Welcome to [ Execute Service ] !"


def advance(ctx, order_id, allowed, target):
    for base in (ORDER, ORDER_OTHER):
        found = rest(ctx, "GET", base + "/" + order_id)
        if found.get("status") == 1:
            if found["data"].get("status") not in allowed:
                return bad(WRONG)
            changed = rest(ctx, "GET", base + "/status/" + order_id + "/" + str(target))
            if changed.get("status") != 1:
                return bad(changed.get("msg"))
            return ok(None, "Success." if base == ORDER else "Success")
    return bad("Order Not Found")


def collect(ctx, request):
    return advance(ctx, request["params"]["orderId"], (PAID, CHANGE), COLLECTED)


def execute(ctx, request):
    return advance(ctx, request["params"]["orderId"], (COLLECTED,), USED)
