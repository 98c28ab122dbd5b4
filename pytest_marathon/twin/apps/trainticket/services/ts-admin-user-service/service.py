"""ts-admin-user-service: the users for the admin page (FudanSELab/train-ticket
ts-admin-user-service `service/AdminUserServiceImpl.java` getAllUsers forwards to
ts-user-service). Only the read is served."""

from spring import relay
from ts import USER


def welcome(ctx, request):
    return "Welcome to [ AdminUser Service ] !"


def all_users(ctx, request):
    return relay(ctx, "GET", USER.rstrip("/"))
