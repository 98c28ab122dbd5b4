"""SocialGraphService (DeathStarBench socialNetwork/src/SocialGraphService/SocialGraphHandler.h):
GetFollowers reads the user's followers from social-graph-redis (a sorted set there, a hash of
follower -> timestamp here); on a miss from social-graph.social-graph in MongoDB, then writes them to
redis. A redis error is logged (`err.what()`) and rethrown."""


def GetFollowers(ctx, request):
    user_id = int(request["user_id"])
    key = str(user_id) + ":followers"
    redis = ctx.datastore(ctx.env("SocialGraphRedisAddress", "social-graph-redis:6379"))
    try:
        cached = redis.hgetall(key)
    except ctx.RpcError as err:
        ctx.log("error", err.message)
        ctx.fail("UNKNOWN", err.message)
    if cached:
        return {"followers": sorted(int(f) for f in cached)}
    graph = ctx.mongo(ctx.env("SocialGraphMongoAddress", "social-graph-mongodb:27017"))
    try:
        doc = graph.collection("social-graph", "social-graph").find_one({"user_id": user_id})
    except ctx.MongoError as err:
        ctx.log("error", err.message)
        ctx.fail("UNKNOWN", err.message)
    followers = [f["user_id"] for f in (doc or {}).get("followers", [])]
    try:
        for f in (doc or {}).get("followers", []):
            redis.hset(key, str(f["user_id"]), str(f["timestamp"]))
    except ctx.RpcError as err:
        ctx.log("error", err.message)
        ctx.fail("UNKNOWN", err.message)
    return {"followers": sorted(followers)}
