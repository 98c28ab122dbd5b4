"""PostStorageService (DeathStarBench socialNetwork/src/PostStorageService/PostStorageHandler.h).

StorePost inserts into post.post (`Error: Failed to insert post to MongoDB: <error>`). ReadPosts:
nothing to read returns at once; one libmemcached mget of the ids (a failed mget logs `Cannot get
post_ids of request <id>: <strerror>` and throws the strerror text), the misses from post.post, each
written back to memcached (a failed set is a warning, `Failed to set post to Memcached: <strerror>`)."""

import json


def posts(ctx):
    return ctx.mongo(ctx.env("PostStorageMongoAddress", "post-storage-mongodb:27017")).collection("post", "post")


def StorePost(ctx, request):
    try:
        posts(ctx).insert_one(dict(request["post"]))
    except ctx.MongoError as err:
        ctx.log("error", "Error: Failed to insert post to MongoDB: " + err.message)
        ctx.fail("UNKNOWN", err.message)
    return {}


def ReadPosts(ctx, request):
    ids = [str(i) for i in request.get("post_ids", [])]
    if not ids:
        return {"posts": []}
    memc = ctx.memcached(ctx.env("PostStorageMemcAddress", "post-storage-memcached:11211"))
    try:
        found = memc.get_multi(ids)
    except ctx.MemcacheError as err:
        ctx.log("error", "Cannot get post_ids of request " + str(ctx.request_id) + ": " + err.message)
        ctx.fail("UNKNOWN", err.message)
    by_id = {k: json.loads(v) for k, v in found.items()}
    missed = [i for i in ids if i not in by_id]
    if missed:
        try:
            docs = posts(ctx).find({"post_id": {"$in": [int(i) for i in missed]}})
        except ctx.MongoError as err:
            ctx.log("warning", err.message)
            ctx.fail("UNKNOWN", err.message)
        for doc in docs:
            post = {k: v for k, v in doc.items() if k != "_id"}
            by_id[str(post["post_id"])] = post
            try:
                memc.set(str(post["post_id"]), json.dumps(post, sort_keys=True))
            except ctx.MemcacheError as err:
                ctx.log("warning", "Failed to set post to Memcached: " + err.message)
    return {"posts": [by_id[i] for i in ids if i in by_id]}
