"""ts-admin-order-service: all orders for the admin page (FudanSELab/train-ticket
ts-admin-order-service `service/AdminOrderServiceImpl.java` getAllOrders: ts-order-service's and
ts-order-other-service's lists joined, `Get the orders successfully!`). Only the read is served."""

from spring import ok, rest
from ts import ORDER, ORDER_OTHER


def welcome(ctx, request):
    return "Welcome to [ AdminOrder Service ] !"


def all_orders(ctx, request):
    mine = rest(ctx, "GET", ORDER)
    other = rest(ctx, "GET", ORDER_OTHER)
    return ok((mine.get("data") or []) + (other.get("data") or []), "Get the orders successfully!")
