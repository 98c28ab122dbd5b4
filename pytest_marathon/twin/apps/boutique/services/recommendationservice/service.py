"""recommendationservice: up to five catalog products the user is not looking at (Python)."""

import hashlib

MAX_RESPONSES = 5


def shuffled(ids, seed):
    """Deterministic stand-in for random.sample: order by a per-request hash."""
    return sorted(ids, key=lambda product_id: hashlib.sha256(
        f"{seed}:{product_id}".encode()).hexdigest())


def ListRecommendations(ctx, request):
    ctx.work(2.0)
    requested = request.get("product_ids", [])
    catalog_addr = ctx.env("PRODUCT_CATALOG_SERVICE_ADDR")
    catalog = ctx.call(catalog_addr, "ListProducts", {})
    product_ids = [product["id"] for product in catalog.get("products", [])]
    filtered = [product_id for product_id in product_ids if product_id not in requested]
    count = min(MAX_RESPONSES, len(filtered))
    chosen = shuffled(filtered, f"{ctx.request_id}:{request.get('user_id', '')}")[:count]
    ctx.log("info", f"[Recv ListRecommendations] product_ids={chosen}")
    return {"product_ids": chosen}


def init(ctx):
    """__main__: the server does not start without the catalog's address."""
    if not ctx.env("PRODUCT_CATALOG_SERVICE_ADDR", ""):
        raise Exception("PRODUCT_CATALOG_SERVICE_ADDR environment variable not set")
