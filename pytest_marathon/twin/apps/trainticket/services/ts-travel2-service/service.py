"""ts-travel2-service: other trips (Z, T, K) over ts-travel2-mongo (FudanSELab/train-ticket
ts-travel2-service `controller/Travel2Controller.java`, `service/TravelServiceImpl.java`; the
logic is shared with ts-travel-service, shared/travelcore.py)."""

import travelcore
from ts import ORDER_OTHER

MONGO = "ts-travel2-mongo"


def welcome(ctx, request):
    return "Welcome to [ Travle2 Service ] !"


def query_info(ctx, request):
    return travelcore.query(ctx, request, MONGO, ORDER_OTHER)


def trip_detail(ctx, request):
    return travelcore.trip_detail(ctx, request, MONGO, ORDER_OTHER)


def route_by_trip(ctx, request):
    return travelcore.route_by_trip(ctx, request, MONGO)


def train_type_by_trip(ctx, request):
    return travelcore.train_type_by_trip(ctx, request, MONGO)


def retrieve(ctx, request):
    return travelcore.retrieve(ctx, request, MONGO)


def query_all(ctx, request):
    return travelcore.query_all(ctx, request, MONGO)
