"""ts-seat-service: left tickets and seat numbers (FudanSELab/train-ticket ts-seat-service
`service/SeatServiceImpl.java`). For a G/D train it asks ts-travel-service for the route,
ts-order-service for the tickets sold and ts-travel-service for the train type; for the others
travel2 and order-other. getLeftTicketOfInterval counts the sold tickets that still occupy the
leg and, with DirectTicketAllocationProportion from ts-config-service, the seats left;
distributeSeat reuses a sold seat whose ticket ends before the request's start, else draws one
(java.util.Random, here from the request id)."""

from spring import data, draw, ok
from ts import CONFIG, ORDER, ORDER_OTHER, TRAVEL, TRAVEL2, is_high_speed

FIRSTCLASS = 2


def lookups(ctx, seat):
    travel, order = (TRAVEL, ORDER) if is_high_speed(seat["trainNumber"]) else (TRAVEL2, ORDER_OTHER)
    route = data(ctx, "GET", travel + "/routes/" + seat["trainNumber"]) or {"stations": []}
    sold = data(ctx, "POST", order + "/tickets", seat) or {"soldTickets": []}
    train = data(ctx, "GET", travel + "/train_types/" + seat["trainNumber"]) or {}
    return route["stations"], sold.get("soldTickets") or [], train


def total_of(train, seat):
    return int(train.get("confortClass" if seat.get("seatType") == FIRSTCLASS else "economyClass", 0))


def welcome(ctx, request):
    return "Welcome to [ Seat Service ] !"


def left_tickets(ctx, request):
    seat = request["body"] or {}
    stations, sold, train = lookups(ctx, seat)
    start = seat.get("startStation")
    free_again = 0
    for ticket in sold:
        if ticket.get("destStation") in stations and start in stations and \
                stations.index(ticket["destStation"]) < stations.index(start):
            free_again += 1
    proportion = float((data(ctx, "GET", CONFIG + "DirectTicketAllocationProportion") or {}).get("value", "0.5"))
    total = total_of(train, seat)
    direct = stations[:1] == [start] and stations[-1:] == [seat.get("destStation")]
    share = total if direct else int(total * proportion)
    left = min(share, 2147483647) - len(sold) + free_again
    return ok(left, "Get Left Ticket of Internal Success")


def distribute(ctx, request):
    seat = request["body"] or {}
    stations, sold, train = lookups(ctx, seat)
    start = seat.get("startStation")
    ticket = {"startStation": start, "destStation": seat.get("destStation")}
    for previous in sold:
        if previous.get("destStation") in stations and start in stations and \
                stations.index(previous["destStation"]) < stations.index(start):
            ticket["seatNo"] = previous["seatNo"]
            return ok(ticket, "Use the previous distributed seat number!")
    taken = [t.get("seatNo") for t in sold]
    total = max(1, min(total_of(train, seat), 2147483647))
    number = draw(ctx, "seat", 1, total)
    step = 0
    while number in taken and step < len(taken) + 1:
        step += 1
        number = draw(ctx, "seat" + str(step), 1, total)
    ticket["seatNo"] = number
    return ok(ticket, "Use a new seat number!")
