"""hotelReservation geo (xlab-uiuc/aiopslab-applications `cmd/geo/db.go`, `services/geo/server.go`).

At start `initializeDatabase` dials `mongodb://admin:admin@<GeoMongoAddress>` (credentials
hard-coded by AIOpsLab's fork) and counts hotelId "1" in geo-db.geo, inserting the points when
missing: a failed dial is `log.Panic` (zerolog logs the message, then Go panics), a failed count or
insert is `log.Fatal` (logged, exit 1), so revoked roles or a dropped user crash-loop the container
once it restarts. Then `newGeoIndex` loads every point; a failed load is logged (`Failed get geo
data: %!(EXTRA ...)`, the fork's Msgf without a verb) and leaves the index empty. Nearby answers
the 5 nearest hotels within 10 km (maxSearchResults, maxSearchRadius) from that in-memory index,
so a fault of mongodb-geo after the start does not touch requests."""

import math

import db as connection

MAX_SEARCH_RESULTS = 5
MAX_SEARCH_RADIUS_KM = 10.0
KM_PER_DEGREE = 111.195  # 6371 km * pi / 180
COS_SF_LATITUDE = 0.790
STATE = {"index": []}  # the ClusteringIndex newGeoIndex fills, per process


def init(ctx):
    ctx.log("info", "Initializing DB connection...")
    db = ctx.mongo(connection.mongo_url(ctx.env("GeoMongoAddress", "mongodb-geo:27017")))
    points = db.collection("geo-db", "geo")
    try:
        count = points.count({"hotelId": "1"})
    except ctx.MongoError as err:
        ctx.log("error", err.message)
        if err.kind != "server":
            raise Exception(err.message) from None  # mgo.Dial failed: log.Panic
        raise ctx.Exit(1) from None  # log.Fatal
    ctx.log("info", "New session successfull...")
    ctx.log("info", "Generating test data...")
    if count == 0:
        ctx.log("warning", "geo-db.geo is empty")
    try:
        loaded = points.find({})
    except ctx.MongoError as err:
        ctx.log("error", "Failed get geo data: %!(EXTRA *mgo.QueryError=" + err.message + ")")
        loaded = []
    STATE["index"] = [(p["hotelId"], p["lat"], p["lon"]) for p in loaded]
    ctx.log("info", "Successfully registered in consul")


def distance_km(lat1, lon1, lat2, lon2):
    """geoindex's great-circle km, flattened: over the few km of the city an equirectangular
    distance at San Francisco's latitude (cos 37.8 deg = 0.790) is within 0.1 % of the haversine."""
    dlat, dlon = lat2 - lat1, (lon2 - lon1) * COS_SF_LATITUDE
    return KM_PER_DEGREE * math.sqrt(dlat * dlat + dlon * dlon)


def Nearby(ctx, request):
    lat, lon = float(request["lat"]), float(request["lon"])
    ranked = sorted((distance_km(lat, lon, plat, plon), hid) for hid, plat, plon in STATE["index"])
    return {"hotelIds": [hid for km, hid in ranked[:MAX_SEARCH_RESULTS] if km <= MAX_SEARCH_RADIUS_KM]}
