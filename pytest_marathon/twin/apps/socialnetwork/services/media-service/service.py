"""MediaService (DeathStarBench socialNetwork/src/MediaService/MediaHandler.h): ComposeMedia pairs
the ids with the types; lists of different lengths are a ServiceException."""


def ComposeMedia(ctx, request):
    ids, types = list(request.get("media_ids", [])), list(request.get("media_types", []))
    if len(ids) != len(types):
        ctx.fail("UNKNOWN", "The lengths of media_id list and media_type list are not equal")
    return {"media": [{"media_id": i, "media_type": t} for i, t in zip(ids, types)]}
