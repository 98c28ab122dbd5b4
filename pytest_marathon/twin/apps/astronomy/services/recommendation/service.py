"""recommendation: up to five catalog products other than the ones asked about (Python, grpcio).

Upstream: open-telemetry/opentelemetry-demo 2.2.0 src/recommendation/recommendation_server.py
(RecommendationService.ListRecommendations, get_product_list, must_map_env, __main__). The product
ids arrive as a list that the code joins and splits on commas; the catalog comes from
ProductCatalog.ListProducts on an insecure channel without a deadline, and a failed call escapes the
servicer (grpcio answers UNKNOWN "Exception calling application: ..." and logs it; the engine does
both). The `recommendationCacheFailure` flag path is reproduced as 2.2.0 ships it: on a cache miss
it calls GetProduct with an empty request, which product-catalog answers NotFound (fixed upstream
after 2.2.0 in #3260).
"""

import rand

MAX_RESPONSES = 5
STATE = {"first_run": True, "cached_ids": []}  # module globals first_run, cached_ids


def catalog_addr(ctx):
    return ctx.env("PRODUCT_CATALOG_ADDR")


def get_product_list(ctx, request_product_ids, rng):
    request_product_ids = "".join(request_product_ids).split(",")
    if ctx.flag("recommendationCacheFailure", False):
        if rng.random() < 0.5 or STATE["first_run"]:
            STATE["first_run"] = False
            ctx.log("info", "get_product_list: cache miss")
            response = ctx.call(catalog_addr(ctx), "GetProduct", {})
            response_ids = [product["id"] for product in response["products"]]
            cached = STATE["cached_ids"] + response_ids
            STATE["cached_ids"] = cached + cached[:len(cached) // 4]
        else:
            ctx.log("info", "get_product_list: cache hit")
        product_ids = STATE["cached_ids"]
    else:
        response = ctx.call(catalog_addr(ctx), "ListProducts", {})
        product_ids = [product["id"] for product in response.get("products", [])]

    filtered_products = sorted(set(product_ids) - set(request_product_ids))
    num_products = len(filtered_products)
    num_return = min(MAX_RESPONSES, num_products)
    indices = rng.sample(range(num_products), num_return)
    return [filtered_products[i] for i in indices]


def ListRecommendations(ctx, request):
    ctx.work(0.5)
    rng = rand.Random(ctx.request_id)
    prod_list = get_product_list(ctx, request.get("product_ids", []), rng)
    ctx.log("info", f"Receive ListRecommendations for product ids:{prod_list}")
    return {"product_ids": prod_list}


def must_map_env(ctx, key):
    value = ctx.env(key)
    if value is None:
        raise Exception(f"{key} environment variable must be set")
    return value


def init(ctx):
    """__main__: the service name, the catalog address and the port are required."""
    must_map_env(ctx, "OTEL_SERVICE_NAME")
    must_map_env(ctx, "PRODUCT_CATALOG_ADDR")
    port = must_map_env(ctx, "RECOMMENDATION_PORT")
    ctx.log("info", f"Recommendation service started, listening on port {port}")
