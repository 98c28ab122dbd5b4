"""ts-ticketinfo-service: a pass-through to ts-basic-service (FudanSELab/train-ticket
ts-ticketinfo-service `service/TicketInfoServiceImpl.java`: queryForTravel posts to
/basic/travel, queryForStationId gets /basic/{name}; no datastore)."""

from spring import relay
from ts import BASIC


def welcome(ctx, request):
    return "Welcome to [ TicketInfo Service ] !"


def query_for_travel(ctx, request):
    return relay(ctx, "POST", BASIC + "/travel", request["body"])


def query_for_station_id(ctx, request):
    return relay(ctx, "GET", BASIC + "/" + request["params"]["name"])
