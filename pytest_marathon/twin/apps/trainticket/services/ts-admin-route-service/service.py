"""ts-admin-route-service: the routes for the admin page (FudanSELab/train-ticket
ts-admin-route-service `service/AdminRouteServiceImpl.java` getAllRoutes forwards to
ts-route-service). Only the read is served."""

from spring import relay
from ts import ROUTE


def welcome(ctx, request):
    return "Welcome to [ AdminRoute Service ] !"


def all_routes(ctx, request):
    return relay(ctx, "GET", ROUTE.rstrip("/"))
