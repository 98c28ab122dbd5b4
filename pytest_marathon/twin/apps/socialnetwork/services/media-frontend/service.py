"""media-frontend (DeathStarBench socialNetwork/media-frontend/lua-scripts/get-media.lua): serves
uploaded media from media-mongodb's GridFS. The load sends it nothing (mixed-workload.lua posts
media ids only); the twin answers 404 for any file, none having been uploaded."""


def get_media(ctx, request):
    return {"status": 404, "body": "Not Found"}
