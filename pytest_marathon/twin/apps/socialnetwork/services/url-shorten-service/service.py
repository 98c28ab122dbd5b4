"""UrlShortenService (DeathStarBench socialNetwork/src/UrlShortenService/UrlShortenHandler.h):
ComposeUrls gives each url `http://short-url/` and 10 random characters (here drawn from the request
id) and inserts the pairs into url-shorten.url-shorten; a failed insert logs `MongoDB error: <error>`
and throws `Failed to insert urls to MongoDB`, then `Failed to upload shortened urls from MongoDB`
where the future is read."""

import hashlib

HOSTNAME = "http://short-url/"
CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def short(ctx, n):
    digest = hashlib.sha256((str(ctx.request_id) + ":" + str(n)).encode()).hexdigest()
    return HOSTNAME + "".join(CHARS[int(digest[2 * i:2 * i + 2], 16) % len(CHARS)] for i in range(10))


def ComposeUrls(ctx, request):
    urls = [{"expanded_url": u, "shortened_url": short(ctx, i)} for i, u in enumerate(request.get("urls", []))]
    if urls:
        store = ctx.mongo(ctx.env("UrlShortenMongoAddress", "url-shorten-mongodb:27017"))
        try:
            collection = store.collection("url-shorten", "url-shorten")
            for url in urls:
                collection.insert_one(dict(url))
        except ctx.MongoError as err:
            ctx.log("error", "MongoDB error: " + err.message)
            ctx.log("error", "Failed to upload shortened urls from MongoDB")
            ctx.fail("UNKNOWN", "Failed to insert urls to MongoDB")
    return {"urls": urls}
