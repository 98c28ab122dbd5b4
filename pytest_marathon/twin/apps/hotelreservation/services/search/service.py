"""hotelReservation search (DeathStarBench `services/search/server.go` Nearby): the hotels geo
finds near the point, then their rates from rate; either call's error is returned as is (the
client sees the callee's status)."""


def Nearby(ctx, request):
    nearby = ctx.call(ctx.env("GeoAddress"), "Nearby", {"lat": request["lat"], "lon": request["lon"]})
    rates = ctx.call(ctx.env("RateAddress"), "GetRates",
                     {"hotelIds": nearby["hotelIds"], "inDate": request["inDate"], "outDate": request["outDate"]})
    return {"hotelIds": [plan["hotelId"] for plan in rates["ratePlans"]]}
