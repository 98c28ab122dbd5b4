"""frontend: the Next.js API routes the shop's browser code and the load generator call (Node 22).

Upstream: open-telemetry/opentelemetry-demo 2.2.0 src/frontend/pages/api/ (products/index.ts,
products/[productId]/index.ts, cart.ts, currency.ts, shipping.ts, checkout.ts,
recommendations.ts, data.ts), services/ProductCatalog.service.ts (Convert only for a currency that
is set and not USD), gateways/rpc/*.gateway.ts (grpc-js clients, no deadline),
gateways/http/Shipping.gateway.ts (fetch, snake_case body, `HTTP error: ...` on a non-2xx) and
utils/telemetry/InstrumentationMiddleware.ts. Pages (`/`) make no backend call. Any failure in a
route propagates: Next.js' apiResolver logs it with console.error and answers 500
`Internal Server Error` (a grpc-js error prints as `Error: <code> <NAME>: <details>`).
Requests carry proto field names (snake_case) on gRPC; the JSON the routes answer is camelCase
(ts-proto).
"""

import json

DEFAULT_CURRENCY = "USD"
GRPC_JS_CODES = {"CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4,
                 "NOT_FOUND": 5, "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8,
                 "FAILED_PRECONDITION": 9, "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12,
                 "INTERNAL": 13, "UNAVAILABLE": 14, "DATA_LOSS": 15, "UNAUTHENTICATED": 16}
SERVER_ERROR = {"status": 500, "body": "Internal Server Error"}
HTTP_STATUS_TEXT = {400: "Bad Request", 404: "Not Found", 500: "Internal Server Error",
                    502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}


class JsError(Exception):
    """A thrown JavaScript error: the text console.error prints first (`Name: message`)."""

    def __init__(self, text):
        self.text = text


def grpc_js_text(err):
    """callErrorFromStatus: `${code} ${Status[code]}: ${details}`."""
    return f"Error: {GRPC_JS_CODES.get(err.code, 2)} {err.code}: {err.message}"


def rpc(ctx, env_name, method, request):
    try:
        return ctx.call(ctx.env(env_name, ""), method, request)
    except ctx.RpcError as err:
        raise JsError(grpc_js_text(err))


def camel(value):
    """ts-proto's JSON of a message: camelCase keys."""
    if hasattr(value, "keys"):
        out = {}
        for key, item in value.items():
            parts = key.split("_")
            out[parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])] = camel(item)
        return out
    if hasattr(value, "append"):
        return [camel(item) for item in value]
    return value


def snake(value):
    """The request bodies the browser sends (camelCase) as proto messages (snake_case)."""
    if hasattr(value, "keys"):
        out = {}
        for key, item in value.items():
            name = "".join("_" + ch.lower() if ch.isupper() else ch for ch in key)
            out[name] = snake(item)
        return out
    if hasattr(value, "append"):
        return [snake(item) for item in value]
    return value


def product_price(ctx, price, currency_code):
    """ProductCatalogService.getProductPrice."""
    if currency_code and currency_code != DEFAULT_CURRENCY:
        return rpc(ctx, "CURRENCY_ADDR", "Convert", {"from": price, "to_code": currency_code})
    return price


def get_product(ctx, product_id, currency_code):
    product = rpc(ctx, "PRODUCT_CATALOG_ADDR", "GetProduct", {"id": product_id})
    return dict(product, price_usd=product_price(ctx, product.get("price_usd", {}), currency_code))


def served(ctx, handler, request):
    """InstrumentationMiddleware + apiResolver: a thrown error is logged and answered 500."""
    try:
        return handler(ctx, request)
    except JsError as err:
        ctx.log("error", err.text)
        return SERVER_ERROR


def query_value(request, name, default=""):
    value = request.get("query", {}).get(name, default)
    return value


def home(ctx, request):
    """pages/index.tsx: server-side rendering only, no backend call."""
    return {"status": 200, "body": "<!DOCTYPE html><html><head><title>OTel demo</title></head></html>"}


def products_route(ctx, request):
    currency_code = query_value(request, "currencyCode")
    listing = rpc(ctx, "PRODUCT_CATALOG_ADDR", "ListProducts", {})
    return camel([dict(p, price_usd=product_price(ctx, p.get("price_usd", {}), currency_code))
                  for p in listing.get("products", [])])


def products(ctx, request):
    return served(ctx, products_route, request)


def product_route(ctx, request):
    product_id = request.get("params", {}).get("productId", "")
    return camel(get_product(ctx, product_id, query_value(request, "currencyCode")))


def product(ctx, request):
    return served(ctx, product_route, request)


def get_cart_route(ctx, request):
    cart = rpc(ctx, "CART_ADDR", "GetCart", {"user_id": query_value(request, "sessionId")})
    currency_code = query_value(request, "currencyCode")
    items = [{"productId": item.get("product_id", ""), "quantity": item.get("quantity", 0),
              "product": camel(get_product(ctx, item.get("product_id", ""), currency_code))}
             for item in cart.get("items", [])]
    return {"userId": cart.get("user_id", ""), "items": items}


def get_cart(ctx, request):
    return served(ctx, get_cart_route, request)


def add_to_cart_route(ctx, request):
    body = request.get("body") or {}
    user_id = body.get("userId", "")
    rpc(ctx, "CART_ADDR", "AddItem", {"user_id": user_id, "item": snake(body.get("item") or {})})
    return camel(rpc(ctx, "CART_ADDR", "GetCart", {"user_id": user_id}))


def add_to_cart(ctx, request):
    return served(ctx, add_to_cart_route, request)


def empty_cart_route(ctx, request):
    body = request.get("body") or {}
    rpc(ctx, "CART_ADDR", "EmptyCart", {"user_id": body.get("userId", "")})
    return {"status": 204, "body": ""}


def empty_cart(ctx, request):
    return served(ctx, empty_cart_route, request)


def currency_route(ctx, request):
    return rpc(ctx, "CURRENCY_ADDR", "GetSupportedCurrencies", {}).get("currency_codes", [])


def currency(ctx, request):
    return served(ctx, currency_route, request)


def parse_json(text):
    try:
        return json.loads(text)
    except ValueError:
        raise JsError(f"SyntaxError: \"{text}\" is not valid JSON")


def shipping_cost(ctx, items, address):
    """Shipping.gateway getShippingCost: fetch with a snake_case body."""
    body = {"items": [{"product_id": i.get("productId"), "quantity": i.get("quantity")} for i in items],
            "address": {"street_address": address.get("streetAddress"), "city": address.get("city"),
                        "state": address.get("state"), "country": address.get("country"),
                        "zip_code": address.get("zipCode")}}
    try:
        resp = ctx.http("POST", ctx.env("SHIPPING_ADDR", "") + "/get-quote", body)
    except ctx.HttpError as err:
        raise JsError(f"TypeError: fetch failed\n  [cause]: Error: {err.message}")
    if not 200 <= resp["status"] < 300:
        text = resp["body"] if isinstance(resp["body"], str) else json.dumps(resp["body"])
        raise JsError(f"Error: HTTP error: {resp['status']} {HTTP_STATUS_TEXT.get(resp['status'], '')} - {text}")
    cost = (resp["body"] or {}).get("cost_usd")
    return cost


def shipping_route(ctx, request):
    items = parse_json(query_value(request, "itemList"))
    address = parse_json(query_value(request, "address"))
    cost = shipping_cost(ctx, items, address)
    return camel(rpc(ctx, "CURRENCY_ADDR", "Convert", {"from": cost, "to_code": query_value(request, "currencyCode", "USD")}))


def shipping(ctx, request):
    return served(ctx, shipping_route, request)


def checkout_route(ctx, request):
    currency_code = query_value(request, "currencyCode")
    order_request = {key: value for key, value in snake(request.get("body") or {}).items() if value is not None}
    order = rpc(ctx, "CHECKOUT_ADDR", "PlaceOrder", order_request).get("order", {})
    items = []
    for line in order.get("items", []):
        item = line.get("item", {})
        items.append({"cost": camel(line.get("cost")),
                      "item": {"productId": item.get("product_id", ""), "quantity": item.get("quantity", 0),
                               "product": camel(get_product(ctx, item.get("product_id", ""), currency_code))}})
    rest = camel({key: value for key, value in order.items() if key != "items"})
    rest["items"] = items
    return rest


def checkout(ctx, request):
    return served(ctx, checkout_route, request)


def recommendations_route(ctx, request):
    product_ids = query_value(request, "productIds", [])
    # a single query value is a string; ts-proto's encode iterates it with for..of (characters)
    ids = [ch for ch in product_ids] if isinstance(product_ids, str) else product_ids
    listed = rpc(ctx, "RECOMMENDATION_ADDR", "ListRecommendations",
                 {"user_id": query_value(request, "sessionId"), "product_ids": ids})
    currency_code = query_value(request, "currencyCode")
    return [camel(get_product(ctx, pid, currency_code)) for pid in listed.get("product_ids", [])[:4]]


def recommendations(ctx, request):
    return served(ctx, recommendations_route, request)


def ads_route(ctx, request):
    keys = query_value(request, "contextKeys", [])
    context_keys = keys.split(",") if isinstance(keys, str) else keys
    return camel(rpc(ctx, "AD_ADDR", "GetAds", {"context_keys": context_keys}).get("ads", []))


def ads(ctx, request):
    return served(ctx, ads_route, request)
