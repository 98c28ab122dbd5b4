"""ts-admin-basic-info-service: the admin pages' pass-through to the basic data services
(FudanSELab/train-ticket ts-admin-basic-info-service `service/AdminBasicInfoServiceImpl.java`:
each GET forwards to ts-contacts, ts-station, ts-train, ts-config or ts-price-service and returns
its Response). Only the reads are served (docs/fidelity.md)."""

from spring import relay

CONTACTS = "http://ts-contacts-service:12347/api/v1/contactservice/contacts"
STATIONS = "http://ts-station-service:12345/api/v1/stationservice/stations"
TRAINS = "http://ts-train-service:14567/api/v1/trainservice/trains"
CONFIGS = "http://ts-config-service:15679/api/v1/configservice/configs"
PRICES = "http://ts-price-service:16579/api/v1/priceservice/prices"


def welcome(ctx, request):
    return "Welcome to [ AdminBasicInfo Service ] !"


def contacts(ctx, request):
    return relay(ctx, "GET", CONTACTS)


def stations(ctx, request):
    return relay(ctx, "GET", STATIONS)


def trains(ctx, request):
    return relay(ctx, "GET", TRAINS)


def configs(ctx, request):
    return relay(ctx, "GET", CONFIGS)


def prices(ctx, request):
    return relay(ctx, "GET", PRICES)
