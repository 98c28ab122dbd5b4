"""ComposePostService (DeathStarBench socialNetwork/src/ComposePostService/ComposePostHandler.h).

ComposePost gathers the post's parts (upstream starts the four calls with std::async and waits for
them in this order: unique-id, user, media, text; the twin makes them one after another), then
stores the post (post-storage StorePost) and writes the author's timeline (user-timeline
WriteUserTimeline) and the followers' and mentioned users' home timelines (home-timeline
WriteHomeTimeline). Any failure leaves the handler: nginx answers 500 with its text."""

from thrift import call


def ComposePost(ctx, request):
    post_id = call(ctx, "UniqueIdAddress", "unique-id-service-client", "ComposeUniqueId",
                   {"post_type": request.get("post_type", 0)},
                   "Failed to send compose-unique_id to unique_id-service")["post_id"]
    creator = call(ctx, "UserAddress", "user-service-client", "ComposeCreatorWithUserId",
                   {"user_id": request["user_id"], "username": request["username"]},
                   "Failed to send compose-creator to user-service")
    media = call(ctx, "MediaAddress", "media-service-client", "ComposeMedia",
                 {"media_types": request.get("media_types", []), "media_ids": request.get("media_ids", [])},
                 "Failed to send compose-media to media-service")["media"]
    text = call(ctx, "TextAddress", "text-service-client", "ComposeText", {"text": request["text"]},
                "Failed to send compose-text to text-service")
    timestamp = int(ctx.now * 1000)
    post = {"post_id": post_id, "creator": creator, "req_id": ctx.request_id, "text": text["text"],
            "user_mentions": text["user_mentions"], "media": media, "urls": text["urls"],
            "timestamp": timestamp, "post_type": request.get("post_type", 0)}
    call(ctx, "PostStorageAddress", "post-storage-client", "StorePost", {"post": post},
         "Failed to store post to post-storage-service")
    call(ctx, "UserTimelineAddress", "user-timeline-client", "WriteUserTimeline",
         {"post_id": post_id, "user_id": request["user_id"], "timestamp": timestamp})
    call(ctx, "HomeTimelineAddress", "home-timeline-client", "WriteHomeTimeline",
         {"post_id": post_id, "user_id": request["user_id"], "timestamp": timestamp,
          "user_mentions_id": [m["user_id"] for m in text["user_mentions"]]},
         "Failed to write home timeline to home-timeline-service")
    return {}
