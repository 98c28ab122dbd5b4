"""shippingservice: shipping quotes and tracking ids (Go original)."""

import hashlib

QUOTE_PER_ORDER = (8, 990000000)  # $8.99 whatever the basket, as in the Go service
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def item_count(items):
    count = 0
    for item in items:
        count = count + item.get("quantity", 0)
    return count


def quote_from_count(count):
    if count == 0:
        return 0, 0
    return QUOTE_PER_ORDER


def tracking_id(ctx, address):
    """A deterministic stand-in for the Go service's random "XX-12345-67890" ids."""
    salt = f"{address.get('street_address', '')}, {address.get('city', '')}, " \
           f"{address.get('state', '')}:{ctx.request_id}"
    digest = hashlib.sha256(salt.encode()).hexdigest()
    first = LETTERS[int(digest[0:2], 16) % 26]
    second = LETTERS[int(digest[2:4], 16) % 26]
    return f"{first}{second}-{int(digest[4:12], 16) % 100000}{len(salt)}-" \
           f"{int(digest[12:20], 16) % 100000}{len(salt) // 2}"


def GetQuote(ctx, request):
    ctx.work(0.8)
    ctx.log("info", "[GetQuote] received request")
    units, nanos = quote_from_count(item_count(request.get("items", [])))
    ctx.log("info", "[GetQuote] completed request")
    return {"cost_usd": {"currency_code": "USD", "units": units, "nanos": nanos}}


def ShipOrder(ctx, request):
    ctx.work(1.0)
    ctx.log("info", "[ShipOrder] received request")
    address = request.get("address", {})
    if not address.get("street_address") or not address.get("country"):
        ctx.fail("INVALID_ARGUMENT", "shipping address is incomplete")
    tracking = tracking_id(ctx, address)
    ctx.log("info", "[ShipOrder] completed request")
    return {"tracking_id": tracking}
