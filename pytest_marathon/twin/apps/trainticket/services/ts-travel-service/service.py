"""ts-travel-service: high-speed trips (G, D) over ts-travel-mongo (FudanSELab/train-ticket
ts-travel-service `controller/TravelController.java`, `service/TravelServiceImpl.java`; the
logic is shared with ts-travel2-service, shared/travelcore.py)."""

import travelcore
from ts import ORDER

MONGO = "ts-travel-mongo"


def welcome(ctx, request):
    return "Welcome to [ Travel Service ] !"


def query_info(ctx, request):
    return travelcore.query(ctx, request, MONGO, ORDER)


def trip_detail(ctx, request):
    return travelcore.trip_detail(ctx, request, MONGO, ORDER)


def route_by_trip(ctx, request):
    return travelcore.route_by_trip(ctx, request, MONGO)


def train_type_by_trip(ctx, request):
    return travelcore.train_type_by_trip(ctx, request, MONGO)


def retrieve(ctx, request):
    return travelcore.retrieve(ctx, request, MONGO)


def query_all(ctx, request):
    return travelcore.query_all(ctx, request, MONGO)
