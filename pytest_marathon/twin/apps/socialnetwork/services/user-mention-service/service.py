"""UserMentionService (DeathStarBench socialNetwork/src/UserMentionService/UserMentionHandler.h):
ComposeUserMentions looks `<username>:user_id` up in user-memcached (one libmemcached mget; a failed
mget logs `Cannot get usernames of request <id>: <strerror>` and throws the strerror text) and reads
the misses from user.user in user-mongodb. Unknown usernames are left out."""


def ComposeUserMentions(ctx, request):
    usernames = list(request.get("usernames", []))
    if not usernames:
        return {"user_mentions": []}
    memc = ctx.memcached(ctx.env("UserMemcAddress", "user-memcached:11211"))
    keys = [u + ":user_id" for u in usernames]
    try:
        found = memc.get_multi(keys)
    except ctx.MemcacheError as err:
        ctx.log("error", "Cannot get usernames of request " + str(ctx.request_id) + ": " + err.message)
        ctx.fail("UNKNOWN", err.message)
    mentions = [{"user_id": int(found[k]), "username": u} for u, k in zip(usernames, keys) if k in found]
    missed = [u for u, k in zip(usernames, keys) if k not in found]
    if missed:
        users = ctx.mongo(ctx.env("UserMongoAddress", "user-mongodb:27017")).collection("user", "user")
        try:
            docs = users.find({"username": {"$in": missed}})
        except ctx.MongoError as err:
            ctx.log("error", err.message)
            ctx.fail("UNKNOWN", err.message)
        mentions.extend({"user_id": d["user_id"], "username": d["username"]} for d in docs)
    return {"user_mentions": mentions}
