"""hotelReservation rate (xlab-uiuc/aiopslab-applications `cmd/rate/db.go`, `services/rate/server.go`).

Start: as geo, `mongodb://admin:admin@<RateMongoAddress>`, a failed dial is `log.Panic`, a failed
count of hotelId "1" in rate-db.inventory `log.Fatal`. GetRates: a gomemcache GetMulti of the hotel
ids; any error but a miss is `log.Panic` ("Memmcached error while trying to get hotel [id: %v]= %s").
Each miss is read from rate-db.inventory (in its own goroutine); a failed find is `log.Panic`
(`Tried to find hotelId [%v], but got error%!(EXTRA string=<err>)`, the fork's Msgf with one verb
for two arguments), which kills the process; the plans found are written back to memcached as
newline-joined JSON without looking at the result."""

import json


def session(ctx):
    return ctx.mongo("mongodb://admin:admin@" + ctx.env("RateMongoAddress", "mongodb-rate:27017"))


def init(ctx):
    ctx.log("info", "Initializing DB connection...")
    try:
        session(ctx).collection("rate-db", "inventory").count({"hotelId": "1"})
    except ctx.MongoError as err:
        ctx.log("error", err.message)
        if err.kind != "server":
            raise Exception(err.message) from None  # mgo.Dial failed: log.Panic
        raise ctx.Exit(1) from None  # log.Fatal
    ctx.log("info", "New session successfull...")
    ctx.log("info", "Successfully registered in consul")


def GetRates(ctx, request):
    hotel_ids = [str(h) for h in request.get("hotelIds", [])]
    memc = ctx.memcached(ctx.env("RateMemcAddress", "memcached-rate:11211"))
    try:
        found = memc.get_multi(hotel_ids)
    except ctx.MemcacheError as err:
        message = ("Memmcached error while trying to get hotel [id: [" + " ".join(hotel_ids) + "]]= " + err.message)
        ctx.log("error", message)
        raise Exception(message) from None
    plans = []
    for hotel_id in hotel_ids:
        if hotel_id in found:
            plans.extend(json.loads(line) for line in found[hotel_id].split("\n") if line)
    missed = [h for h in hotel_ids if h not in found]
    if missed:
        inventory = session(ctx).collection("rate-db", "inventory")
    for hotel_id in missed:
        try:
            docs = inventory.find({"hotelId": hotel_id})
        except ctx.MongoError as err:
            message = "Tried to find hotelId [" + hotel_id + "], but got error%!(EXTRA string=" + err.message + ")"
            ctx.log("error", message)
            raise Exception(message) from None
        lines = ""
        for doc in docs:
            plan = {k: v for k, v in doc.items() if k != "_id"}
            plans.append(plan)
            lines = lines + json.dumps(plan) + "\n"
        try:  # noqa: SIM105 - no contextlib in the sandbox; the result is dropped as upstream does
            memc.set(hotel_id, lines)
        except ctx.MemcacheError:
            pass
    plans.sort(key=lambda p: -p["roomType"]["totalRate"])
    return {"ratePlans": plans}
