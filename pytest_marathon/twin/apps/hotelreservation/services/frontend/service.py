"""hotelReservation frontend (DeathStarBench `services/frontend/server.go`, AIOpsLab's fork
xlab-uiuc/aiopslab-applications): four handlers over gRPC clients. A failed call is answered with
`http.Error(w, err.Error(), 500)`, the grpc-go status text `rpc error: code = <Code> desc = <desc>`;
searchHandler also logs `SearchHandler CheckAvailability failed` / `SearchHandler GetProfiles
failed` before answering.

The load sends a "product" (`lat,lon`, one draw of wrk2's location); the stay dates, the user and
the hotel a reservation names are derived from the request id as wrk2 draws them
(mixed-workload_type_1.lua: inDate 2015-04-09..23, outDate up to the 24th, Cornell_<0..500> with the
id ten times as password, hotelId 1..80)."""

GO_CODES = {"CANCELLED": "Canceled", "UNKNOWN": "Unknown", "INVALID_ARGUMENT": "InvalidArgument",
            "DEADLINE_EXCEEDED": "DeadlineExceeded", "NOT_FOUND": "NotFound",
            "RESOURCE_EXHAUSTED": "ResourceExhausted", "FAILED_PRECONDITION": "FailedPrecondition",
            "UNIMPLEMENTED": "Unimplemented", "INTERNAL": "Internal", "UNAVAILABLE": "Unavailable",
            "UNAUTHENTICATED": "Unauthenticated", "PERMISSION_DENIED": "PermissionDenied"}


def draw(ctx, salt, low, high):
    """A number in [low, high] from the request id (wrk2's math.random, made deterministic)."""
    text = str(ctx.request_id) + salt
    total = 0
    for ch in text:
        total = (total * 31 + ord(ch)) % 1000003
    return low + total % (high - low + 1)


def day(n):
    return "2015-04-" + ("0" + str(n) if n <= 9 else str(n))


def location(request):
    lat, _, lon = str(request.get("product_id") or "38.0235,-122.095").partition(",")
    return float(lat), float(lon)


def grpc(ctx, env_name, method, request, failed_log=""):
    try:
        return ctx.call(ctx.env(env_name), method, request)
    except ctx.RpcError as err:
        if failed_log:
            ctx.log("error", failed_log)
        ctx.fail("INTERNAL", "rpc error: code = " + GO_CODES.get(err.code, err.code) + " desc = " + err.message)


def geo_json(hotels):
    return {"type": "FeatureCollection",
            "features": [{"type": "Feature", "id": h["id"], "properties": {"name": h["name"], "phone_number": h["phoneNumber"]},
                          "geometry": {"type": "Point", "coordinates": [h["address"]["lon"], h["address"]["lat"]]}}
                         for h in hotels]}


def search(ctx, request):
    """searchHandler: search.Nearby, then reservation.CheckAvailability, then profile.GetProfiles."""
    lat, lon = location(request)
    in_day = draw(ctx, "in", 9, 23)
    in_date, out_date = day(in_day), day(draw(ctx, "out", in_day + 1, 24))
    nearby = grpc(ctx, "SearchAddress", "Nearby", {"lat": lat, "lon": lon, "inDate": in_date, "outDate": out_date})
    available = grpc(ctx, "ReserveAddress", "CheckAvailability",
                     {"customerName": "", "hotelId": nearby["hotelIds"], "inDate": in_date, "outDate": out_date,
                      "roomNumber": 1}, "SearchHandler CheckAvailability failed")
    profiles = grpc(ctx, "ProfileAddress", "GetProfiles", {"hotelIds": available["hotelId"], "locale": "en"},
                    "SearchHandler GetProfiles failed")
    return {"status": 200, "body": geo_json(profiles["hotels"])}


def recommend(ctx, request):
    """recommendHandler: recommendation.GetRecommendations, then profile.GetProfiles."""
    lat, lon = location(request)
    require = ("dis", "rate", "price")[draw(ctx, "require", 0, 2)]
    recommended = grpc(ctx, "RecommendAddress", "GetRecommendations", {"require": require, "lat": lat, "lon": lon})
    profiles = grpc(ctx, "ProfileAddress", "GetProfiles", {"hotelIds": recommended["hotelIds"], "locale": "en"})
    return {"status": 200, "body": geo_json(profiles["hotels"])}


def credentials(ctx):
    n = str(draw(ctx, "user", 0, 500))
    return "Cornell_" + n, n * 10


def user(ctx, request):
    """userHandler: user.CheckUser; a wrong password is still a 200 with the failure text."""
    username, password = credentials(ctx)
    checked = grpc(ctx, "UserAddress", "CheckUser", {"username": username, "password": password})
    text = "Login successfully!" if checked["correct"] else "Failed. Please check your username and password. "
    return {"status": 200, "body": {"message": text}}


def reserve(ctx, request):
    """reservationHandler: user.CheckUser, then reservation.MakeReservation."""
    username, password = credentials(ctx)
    in_day = draw(ctx, "in", 9, 23)
    in_date, out_date = day(in_day), day(in_day + draw(ctx, "nights", 1, 5))
    hotel_id = str(draw(ctx, "hotel", 1, 80))
    checked = grpc(ctx, "UserAddress", "CheckUser", {"username": username, "password": password})
    text = "Reserve successfully!" if checked["correct"] else "Failed. Please check your username and password. "
    made = grpc(ctx, "ReserveAddress", "MakeReservation",
                {"customerName": username, "hotelId": [hotel_id], "inDate": in_date, "outDate": out_date, "roomNumber": 1})
    if not made["hotelId"]:
        text = "Failed. Already reserved. "
    return {"status": 200, "body": {"message": text}}
