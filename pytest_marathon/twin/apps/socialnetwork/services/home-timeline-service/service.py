"""HomeTimelineService (DeathStarBench socialNetwork/src/HomeTimelineService/HomeTimelineHandler.h).

WriteHomeTimeline asks social-graph for the author's followers (`Failed to get followers from
social-network-service` on failure) and adds the post to each follower's and each mentioned user's
timeline in home-timeline-redis (a sorted set by timestamp there, a hash post -> timestamp here).
ReadHomeTimeline takes positions [start, stop) newest first, then reads the posts from post-storage
(`Failed to read posts from post-storage-service`).
A redis error is logged (`err.what()`) and rethrown."""

from thrift import call


def redis(ctx):
    return ctx.datastore(ctx.env("HomeTimelineRedisAddress", "home-timeline-redis:6379"))


def WriteHomeTimeline(ctx, request):
    followers = call(ctx, "SocialGraphAddress", "social-graph-client", "GetFollowers",
                     {"user_id": request["user_id"]}, "Failed to get followers from social-network-service")
    ids = sorted(set(followers["followers"]) | {int(u) for u in request.get("user_mentions_id", [])})
    store = redis(ctx)
    try:
        for user_id in ids:
            store.hset(str(user_id), str(request["post_id"]), str(request["timestamp"]))
    except ctx.RpcError as err:
        ctx.log("error", err.message)
        ctx.fail("UNKNOWN", err.message)
    return {}


def ReadHomeTimeline(ctx, request):
    start, stop = int(request["start"]), int(request["stop"])
    if stop <= start or start < 0:
        return {"posts": []}
    try:
        timeline = redis(ctx).hgetall(str(request["user_id"]))
    except ctx.RpcError as err:
        ctx.log("error", err.message)
        ctx.fail("UNKNOWN", err.message)
    newest = sorted(timeline.items(), key=lambda kv: (-int(kv[1]), kv[0]))[start:stop]
    return call(ctx, "PostStorageAddress", "post-storage-client", "ReadPosts",
                {"post_ids": [int(k) for k, _ in newest]}, "Failed to read posts from post-storage-service")
