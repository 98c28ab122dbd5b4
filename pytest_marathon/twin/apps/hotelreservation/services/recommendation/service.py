"""hotelReservation recommendation (xlab-uiuc/aiopslab-applications `services/recommendation/
server.go`): every hotel of recommendation-db.recommendation is loaded once at start (a failed load
is logged, `Failed get hotels data: ...`, and leaves none); GetRecommendations answers from memory:
`dis` the hotels nearest the point, `rate` the highest rated, `price` the cheapest (ties all kept)."""

import math

STATE = {"hotels": []}  # the profile map loaded at start, per process


def init(ctx):
    coll = ctx.mongo(ctx.env("RecommendMongoAddress", "mongodb-recommendation:27017")).collection(
        "recommendation-db", "recommendation")
    try:
        STATE["hotels"] = [(h["hotelId"], h["lat"], h["lon"], h["rate"], h["price"]) for h in coll.find({})]
    except ctx.MongoError as err:
        ctx.log("error", "Failed get hotels data: %!(EXTRA *mgo.QueryError=" + err.message + ")")
        STATE["hotels"] = []
    ctx.log("info", "Successfully registered in consul")


def GetRecommendations(ctx, request):
    hotels = STATE["hotels"]
    require = request.get("require", "")
    if not hotels or require not in ("dis", "rate", "price"):
        return {"hotelIds": []}
    if require == "dis":
        lat, lon = float(request["lat"]), float(request["lon"])
        scored = [(math.hypot(h[1] - lat, h[2] - lon), h[0]) for h in hotels]
        best = min(s for s, _ in scored)
    elif require == "rate":
        scored = [(-h[3], h[0]) for h in hotels]
        best = min(s for s, _ in scored)
    else:
        scored = [(h[4], h[0]) for h in hotels]
        best = min(s for s, _ in scored)
    return {"hotelIds": [hid for s, hid in scored if s == best]}
