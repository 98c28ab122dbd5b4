"""ts-order-service: orders of G/D trips over ts-order-mongo (FudanSELab/train-ticket
ts-order-service `controller/OrderController.java`; logic shared with ts-order-other-service,
shared/ordercore.py; `init/InitData.java` seeds three unpaid orders of fdse_microservice)."""

import ordercore

MONGO = "ts-order-mongo"


def welcome(ctx, request):
    return "Welcome to [ Order Service ] !"


def create(ctx, request):
    return ordercore.create(ctx, request, MONGO)


def retrieve(ctx, request):
    return ordercore.retrieve(ctx, request, MONGO)


def refresh(ctx, request):
    return ordercore.refresh(ctx, request, MONGO)


def sold_tickets(ctx, request):
    return ordercore.sold_tickets(ctx, request, MONGO)


def sold_count(ctx, request):
    return ordercore.sold_count(ctx, request, MONGO)


def modify_status(ctx, request):
    return ordercore.modify_status(ctx, request, MONGO)


def update(ctx, request):
    return ordercore.update(ctx, request, MONGO)


def security(ctx, request):
    return ordercore.security(ctx, request, MONGO)


def price(ctx, request):
    return ordercore.price(ctx, request, MONGO)


def query_all(ctx, request):
    return ordercore.query_all(ctx, request, MONGO)
