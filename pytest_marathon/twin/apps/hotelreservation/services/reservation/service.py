"""hotelReservation reservation (xlab-uiuc/aiopslab-applications `services/reservation/server.go`).

CheckAvailability: for each hotel, the capacity (`<id>_cap` in memcached, else reservation-db.number)
and, for each night of the stay, the rooms taken (`<id>_<day>_<next day>` in memcached, else the
count of reservation-db.reservation), both written back; a hotel with room for `roomNumber` more is
available. A memcached error but a miss, or a failed find, is `log.Panic` and kills the process.
MakeReservation does the same check for one hotel, then inserts the reservation and bumps the
cached counts."""


def fail(ctx, message):
    ctx.log("error", message)
    raise Exception(message) from None


def nights(in_date, out_date):
    first, last = int(in_date[-2:]), int(out_date[-2:])
    return [(in_date[:-2] + ("0" if d <= 9 else "") + str(d), in_date[:-2] + ("0" if d + 1 <= 9 else "") + str(d + 1))
            for d in range(first, last)]


def cached(ctx, memc, key, load):
    try:
        return int(memc.get(key))
    except ctx.MemcacheError as err:
        if err.kind != "miss":
            fail(ctx, "Tried to get memc_key [" + key + "], but got memmcached error = " + err.message)
    value = load()
    try:  # noqa: SIM105 - no contextlib in the sandbox; the result is dropped as upstream does
        memc.set(key, str(value))
    except ctx.MemcacheError:
        pass
    return value


def room_for(ctx, memc, db, hotel_id, in_date, out_date, rooms):
    def capacity():
        try:
            doc = db.collection("reservation-db", "number").find_one({"hotelId": hotel_id})
        except ctx.MongoError as err:
            fail(ctx, "Tried to find hotelId [" + hotel_id + "], but got error%!(EXTRA string=" + err.message + ")")
        return int(doc["numberOfRoom"]) if doc else 0

    cap = cached(ctx, memc, hotel_id + "_cap", capacity)
    for start, end in nights(in_date, out_date):
        def taken(start=start, end=end):
            try:
                docs = db.collection("reservation-db", "reservation").find(
                    {"hotelId": hotel_id, "inDate": start, "outDate": end})
            except ctx.MongoError as err:
                fail(ctx, "Tried to find hotelId [" + hotel_id + "] from date [" + start + "] to date [" + end
                     + "], but got error%!(EXTRA string=" + err.message + ")")
            return sum(int(d["number"]) for d in docs)

        if cached(ctx, memc, hotel_id + "_" + start + "_" + end, taken) + rooms > cap:
            return False
    return True


def clients(ctx):
    return (ctx.memcached(ctx.env("ReserveMemcAddress", "memcached-reserve:11211")),
            ctx.mongo(ctx.env("ReserveMongoAddress", "mongodb-reservation:27017")))


def CheckAvailability(ctx, request):
    memc, db = clients(ctx)
    rooms = int(request.get("roomNumber", 1))
    return {"hotelId": [str(h) for h in request.get("hotelId", [])
                        if room_for(ctx, memc, db, str(h), request["inDate"], request["outDate"], rooms)]}


def MakeReservation(ctx, request):
    memc, db = clients(ctx)
    hotel_id = str(request["hotelId"][0])
    rooms = int(request.get("roomNumber", 1))
    if not room_for(ctx, memc, db, hotel_id, request["inDate"], request["outDate"], rooms):
        return {"hotelId": []}
    for start, end in nights(request["inDate"], request["outDate"]):
        try:
            db.collection("reservation-db", "reservation").insert_one(
                {"hotelId": hotel_id, "customerName": request.get("customerName", ""), "inDate": start,
                 "outDate": end, "number": rooms})
        except ctx.MongoError as err:
            fail(ctx, "Tried to insert hotel [hotelId " + hotel_id + "], but got error%!(EXTRA string="
                 + err.message + ")")
        try:  # noqa: SIM105 - no contextlib in the sandbox; the result is dropped as upstream does
            memc.incr(hotel_id + "_" + start + "_" + end, rooms)
        except ctx.MemcacheError:
            pass
    return {"hotelId": [hotel_id]}
