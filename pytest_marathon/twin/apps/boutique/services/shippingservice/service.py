"""shippingservice: shipping quotes and tracking ids (Go original).

Upstream: GoogleCloudPlatform/microservices-demo v0.10.6 src/shippingservice/main.go (GetQuote,
ShipOrder), quote.go (CreateQuoteFromCount) and tracker.go (CreateTrackingId). Neither handler
checks the address: the quote depends on the item count alone and the address only salts the
tracking id.
"""

import hashlib

QUOTE_PER_ORDER = (8, 990000000)  # CreateQuoteFromFloat(8.99) whatever the basket
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXY"  # 65 + rand.Intn(25): never Z


def item_count(items):
    count = 0
    for item in items:
        count = count + item.get("quantity", 0)
    return count


def quote_from_count(count):
    if count == 0:
        return 0, 0
    return QUOTE_PER_ORDER


def digits(digest, start, count):
    """getRandomNumber(count), drawn from the digest instead of math/rand."""
    return "".join(str(int(digest[start + i], 16) % 10) for i in range(count))


def tracking_id(ctx, address):
    """CreateTrackingId: "%c%c-%d%s-%d%s" of two letters, len(salt) and three random digits,
    len(salt)/2 and seven random digits; the randomness is derived from the request."""
    salt = f"{address.get('street_address', '')}, {address.get('city', '')}, " \
           f"{address.get('state', '')}"
    digest = hashlib.sha256(f"{salt}:{ctx.request_id}".encode()).hexdigest()
    first = LETTERS[int(digest[0:2], 16) % 25]
    second = LETTERS[int(digest[2:4], 16) % 25]
    return f"{first}{second}-{len(salt)}{digits(digest, 4, 3)}-" \
           f"{len(salt) // 2}{digits(digest, 7, 7)}"


def GetQuote(ctx, request):
    ctx.work(0.8)
    ctx.log("info", "[GetQuote] received request")
    units, nanos = quote_from_count(item_count(request.get("items", [])))
    ctx.log("info", "[GetQuote] completed request")
    return {"cost_usd": {"currency_code": "USD", "units": units, "nanos": nanos}}


def ShipOrder(ctx, request):
    ctx.work(1.0)
    ctx.log("info", "[ShipOrder] received request")
    tracking = tracking_id(ctx, request.get("address", {}))
    ctx.log("info", "[ShipOrder] completed request")
    return {"tracking_id": tracking}
