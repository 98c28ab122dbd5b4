"""ts-admin-travel-service: the trips for the admin page (FudanSELab/train-ticket
ts-admin-travel-service `service/AdminTravelServiceImpl.java` getAllTravels: ts-travel-service's
and ts-travel2-service's trips joined). Only the read is served."""

from spring import ok, rest
from ts import TRAVEL, TRAVEL2


def welcome(ctx, request):
    return "Welcome to [ AdminTravel Service ] !"


def all_travels(ctx, request):
    mine = rest(ctx, "GET", TRAVEL + "/trips")
    other = rest(ctx, "GET", TRAVEL2 + "/trips")
    return ok((mine.get("data") or []) + (other.get("data") or []), "Travel Service Admin Query All Travel Success")
