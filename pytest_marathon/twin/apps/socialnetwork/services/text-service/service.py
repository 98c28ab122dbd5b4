"""TextService (DeathStarBench socialNetwork/src/TextService/TextHandler.h): ComposeText finds the
mentions (`@[a-zA-Z0-9-_]+`) and the urls (`(http://|https://)([a-zA-Z0-9_!~*'().&=+$%-]+)`), has
url-shorten shorten the urls and user-mention look the users up, and puts the short urls into the
text. A failed call is logged twice, in the async helper and where its future is read."""

import re

from thrift import call

MENTION = re.compile(r"@[a-zA-Z0-9_-]+")
URL = re.compile(r"(http://|https://)([a-zA-Z0-9_!~*'().&=+$%-]+)")


def ComposeText(ctx, request):
    text = request["text"]
    usernames = [m[1:] for m in MENTION.findall(text)]
    urls = [m.group(0) for m in URL.finditer(text)]
    try:
        shortened = call(ctx, "UrlShortenAddress", "url-shorten-service-client", "ComposeUrls", {"urls": urls},
                         "Failed to upload urls to url-shorten-service")["urls"]
    except Exception:
        ctx.log("error", "Failed to get shortened urls from url-shorten-service")
        raise
    try:
        mentions = call(ctx, "UserMentionAddress", "user-mention-service-client", "ComposeUserMentions",
                        {"usernames": usernames},
                        "Failed to upload user_mentions to user-mention-service")["user_mentions"]
    except Exception:
        ctx.log("error", "Failed to upload user mentions to user-mention-service")
        raise
    for url in shortened:
        text = text.replace(url["expanded_url"], url["shortened_url"])
    return {"text": text, "urls": shortened, "user_mentions": mentions}
