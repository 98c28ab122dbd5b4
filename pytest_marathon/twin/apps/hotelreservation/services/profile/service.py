"""hotelReservation profile (xlab-uiuc/aiopslab-applications `services/profile/server.go`
GetProfiles): a gomemcache GetMulti of the hotel ids, any error but a miss `log.Panic` ("Tried to
get hotelIds [%v], but got memmcached error = %s"); each miss is read from profile-db.hotels
(`Find({"id": ...}).One`, a failure only logged: `Failed get hotels data: %!(EXTRA ...)`) and
written back to memcached as JSON without looking at the result."""

import json


def GetProfiles(ctx, request):
    hotel_ids = [str(h) for h in request.get("hotelIds", [])]
    memc = ctx.memcached(ctx.env("ProfileMemcAddress", "memcached-profile:11211"))
    try:
        found = memc.get_multi(hotel_ids)
    except ctx.MemcacheError as err:
        message = "Tried to get hotelIds [" + " ".join(hotel_ids) + "], but got memmcached error = " + err.message
        ctx.log("error", message)
        raise Exception(message) from None
    hotels = [json.loads(found[h]) for h in hotel_ids if h in found]
    missed = [h for h in hotel_ids if h not in found]
    if missed:
        coll = ctx.mongo(ctx.env("ProfileMongoAddress", "mongodb-profile:27017")).collection("profile-db", "hotels")
    for hotel_id in missed:
        try:
            doc = coll.find_one({"id": hotel_id})
        except ctx.MongoError as err:
            ctx.log("error", "Failed get hotels data: %!(EXTRA *mgo.QueryError=" + err.message + ")")
            doc = None
        profile = {k: v for k, v in (doc or {"id": "", "name": "", "phoneNumber": "", "description": "",
                                              "address": {"lat": 0.0, "lon": 0.0}}).items() if k != "_id"}
        hotels.append(profile)
        try:  # noqa: SIM105 - no contextlib in the sandbox; the result is dropped as upstream does
            memc.set(hotel_id, json.dumps(profile))
        except ctx.MemcacheError:
            pass
    return {"hotels": hotels}
