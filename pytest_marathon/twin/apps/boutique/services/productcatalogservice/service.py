"""productcatalogservice: the product catalog, read from products.json at startup (Go original).

Upstream: GoogleCloudPlatform/microservices-demo v0.10.6 src/productcatalogservice/
product_catalog.go: every handler starts with `time.Sleep(extraLatency)` (EXTRA_LATENCY), a wait
that costs no CPU, then answers from the parsed catalog.
"""

import json

CATALOG = json.loads(resource("products.json"))["products"]
BY_ID = {product["id"]: product for product in CATALOG}


def extra_latency_ms(ctx):
    """EXTRA_LATENCY (e.g. "5.5s" or "200ms") slows every request, like the Go service."""
    raw = ctx.env("EXTRA_LATENCY", "")
    if not raw:
        return 0.0
    if raw.endswith("ms"):
        return float(raw[:-2])
    if raw.endswith("s"):
        return float(raw[:-1]) * 1000.0
    ctx.log("warning", f"failed to parse EXTRA_LATENCY ({raw}): unknown unit")
    return 0.0


def to_message(product):
    """The Product message as the Go service returns it (price is `price_usd`)."""
    return {
        "id": product["id"],
        "name": product["name"],
        "description": product["description"],
        "picture": product["picture"],
        "price_usd": dict(product["price_usd"]),
        "categories": list(product["categories"]),
    }


def ListProducts(ctx, request):
    ctx.sleep(extra_latency_ms(ctx))
    ctx.work(1.0)
    return {"products": [to_message(product) for product in CATALOG]}


def GetProduct(ctx, request):
    ctx.sleep(extra_latency_ms(ctx))
    ctx.work(0.5)
    product_id = request.get("id", "")
    product = BY_ID.get(product_id)
    if product is None:
        ctx.fail("NOT_FOUND", f"no product with ID {product_id}")
    return to_message(product)


def SearchProducts(ctx, request):
    ctx.sleep(extra_latency_ms(ctx))
    ctx.work(1.5)
    query = request.get("query", "").lower()
    results = [to_message(product) for product in CATALOG
               if query in product["name"].lower() or query in product["description"].lower()]
    return {"results": results}


DURATION_UNITS = ("ns", "us", "\u00b5s", "\u03bcs", "ms", "s", "m", "h")
DIGITS = "0123456789"


def leading_run(text, allowed):
    end = 0
    while end < len(text) and text[end] in allowed:
        end += 1
    return text[:end]


def duration_error(text):
    """Why Go's time.ParseDuration rejects `text` (its error text), or "" when it parses."""
    quoted = json.dumps(text, ensure_ascii=False)
    rest = text[1:] if text[:1] in ("+", "-") else text
    if rest == "0":
        return ""
    if not rest:
        return f"time: invalid duration {quoted}"
    while rest:
        number = leading_run(rest, DIGITS + ".")
        if number.count(".") > 1 or not any(c in DIGITS for c in number):
            return f"time: invalid duration {quoted}"
        rest = rest[len(number):]
        unit = ""
        while rest[len(unit):len(unit) + 1] and rest[len(unit)] not in DIGITS + ".":
            unit += rest[len(unit)]
        if not unit:
            return f"time: missing unit in duration {quoted}"
        if unit not in DURATION_UNITS:
            return f"time: unknown unit {json.dumps(unit, ensure_ascii=False)} in duration {quoted}"
        rest = rest[len(unit):]
    return ""


def init(ctx):
    """main(): a malformed EXTRA_LATENCY is fatal (log.Fatalf prints the zero duration, 0s)."""
    raw = ctx.env("EXTRA_LATENCY", "")
    problem = duration_error(raw) if raw else ""
    if problem:
        ctx.log("error", f"failed to parse EXTRA_LATENCY (0s) as time.Duration: {problem}")
        raise ctx.Exit(1)
