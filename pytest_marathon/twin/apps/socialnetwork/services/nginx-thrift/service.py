"""nginx-thrift (DeathStarBench socialNetwork/nginx-web-server/lua-scripts/wrk2-api/): OpenResty
handlers that call the Thrift services. A failed call answers 500 with the handler's prefix and the
exception's message, logged at ERR: `compost_post failure: ` (sic) for post/compose.lua,
`Get home-timeline failure: ` / `Get user-timeline failure: ` for the reads. Lua's socket error for a
refused connect is ngx.socket's `connection refused` (lua-nginx-module tcpsock:connect).

What wrk2's mixed-workload.lua draws with math.random is derived from the request id here: the user
(0..max_user_index-1), the timeline window (start 0..100, stop start+10), and the post's 256-character
text, mentions (the loop runs 0..5 inclusive, so one to six), urls (`http://` and 64 characters, one
to six) and media ids (one to five)."""

CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
USERS = 100  # the users seeded (max_user_index)


def draw(ctx, salt, low, high):
    """A number in [low, high] from the request id (wrk2's math.random, made deterministic)."""
    total = 0
    for ch in str(ctx.request_id) + salt:
        total = (total * 31 + ord(ch)) % 1000003
    return low + total % (high - low + 1)


def text_of(ctx, salt, length):
    return "".join(CHARS[draw(ctx, salt + str(i), 0, len(CHARS) - 1)] for i in range(length))


def thrift(ctx, env_name, method, request, prefix):
    try:
        return ctx.call(ctx.env(env_name), method, request)
    except ctx.RpcError as err:
        message = err.message if err.code not in ("UNAVAILABLE",) else "connection refused"
        ctx.log("error", prefix + message)
        ctx.fail("INTERNAL", prefix + message)


def user_of(ctx):
    return draw(ctx, "user", 0, USERS - 1)


def compose(ctx, request):
    user_id = user_of(ctx)
    text = text_of(ctx, "text", 256)
    for i in range(draw(ctx, "mentions", 0, 5) + 1):
        text = text + " @username_" + str(draw(ctx, "mention" + str(i), 0, USERS - 1))
    for i in range(draw(ctx, "urls", 0, 5) + 1):
        text = text + " http://" + text_of(ctx, "url" + str(i), 64)
    media = [str(draw(ctx, "media" + str(i), 10 ** 8, 10 ** 9)) for i in range(draw(ctx, "nmedia", 0, 4) + 1)]
    thrift(ctx, "ComposePostAddress", "ComposePost",
           {"username": "username_" + str(user_id), "user_id": user_id, "text": text,
            "media_ids": media, "media_types": ["png"] * len(media), "post_type": 0},
           "compost_post failure: ")
    return {"status": 200, "body": "Successfully upload post"}


def window(ctx):
    start = draw(ctx, "start", 0, 100)
    return start, start + 10


def read_home_timeline(ctx, request):
    start, stop = window(ctx)
    got = thrift(ctx, "HomeTimelineAddress", "ReadHomeTimeline",
                 {"user_id": user_of(ctx), "start": start, "stop": stop}, "Get home-timeline failure: ")
    return {"status": 200, "body": got["posts"]}


def read_user_timeline(ctx, request):
    start, stop = window(ctx)
    got = thrift(ctx, "UserTimelineAddress", "ReadUserTimeline",
                 {"user_id": user_of(ctx), "start": start, "stop": stop}, "Get user-timeline failure: ")
    return {"status": 200, "body": got["posts"]}
