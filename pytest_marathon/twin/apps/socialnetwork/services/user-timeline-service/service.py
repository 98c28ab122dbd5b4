"""UserTimelineService (DeathStarBench socialNetwork/src/UserTimelineService/UserTimelineHandler.h).

WriteUserTimeline adds the post to the user's document in user-timeline.user-timeline (upsert;
`Failed to update user-timeline for user <id> to MongoDB: <error>`), then to the user's sorted set in
user-timeline-redis (a hash post -> timestamp here). ReadUserTimeline reads [start, stop) newest
first from redis; when redis holds fewer than `stop` posts it reads the user's posts from MongoDB and
writes them back to redis; then post-storage ReadPosts (`Failed to read posts from
post-storage-service`)."""

from thrift import call


def redis(ctx):
    return ctx.datastore(ctx.env("UserTimelineRedisAddress", "user-timeline-redis:6379"))


def timelines(ctx):
    store = ctx.mongo(ctx.env("UserTimelineMongoAddress", "user-timeline-mongodb:27017"))
    return store.collection("user-timeline", "user-timeline")


def WriteUserTimeline(ctx, request):
    user_id, post = int(request["user_id"]), {"post_id": request["post_id"], "timestamp": request["timestamp"]}
    try:
        collection = timelines(ctx)
        doc = collection.find_one({"user_id": user_id})
        collection.update_one({"user_id": user_id}, {"$set": {"posts": [post] + list((doc or {}).get("posts", []))}},
                              upsert=True)
    except ctx.MongoError as err:
        ctx.log("error", "Failed to update user-timeline for user " + str(user_id) + " to MongoDB: " + err.message)
        ctx.fail("UNKNOWN", err.message)
    try:
        redis(ctx).hset(str(user_id), str(post["post_id"]), str(post["timestamp"]))
    except ctx.RpcError as err:
        ctx.log("error", err.message)
        ctx.fail("UNKNOWN", err.message)
    return {}


def ReadUserTimeline(ctx, request):
    user_id, start, stop = int(request["user_id"]), int(request["start"]), int(request["stop"])
    if stop <= start or start < 0:
        return {"posts": []}
    store = redis(ctx)
    try:
        timeline = store.hgetall(str(user_id))
    except ctx.RpcError as err:
        ctx.log("error", err.message)
        ctx.fail("UNKNOWN", err.message)
    if len(timeline) < stop:
        try:
            doc = timelines(ctx).find_one({"user_id": user_id})
        except ctx.MongoError as err:
            ctx.log("error", err.message)
            ctx.fail("UNKNOWN", err.message)
        try:
            for post in (doc or {}).get("posts", []):
                if str(post["post_id"]) not in timeline:
                    timeline[str(post["post_id"])] = str(post["timestamp"])
                    store.hset(str(user_id), str(post["post_id"]), str(post["timestamp"]))
        except ctx.RpcError as err:
            ctx.log("error", err.message)
            ctx.fail("UNKNOWN", err.message)
    newest = sorted(timeline.items(), key=lambda kv: (-int(kv[1]), kv[0]))[start:stop]
    return call(ctx, "PostStorageAddress", "post-storage-client", "ReadPosts",
                {"post_ids": [int(k) for k, _ in newest]}, "Failed to read posts from post-storage-service")
