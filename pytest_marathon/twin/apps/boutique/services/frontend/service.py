"""frontend: the shop's HTTP routes (Go original). One handler per route named in app.yaml.

Upstream: GoogleCloudPlatform/microservices-demo v0.10.6 src/frontend/handlers.go (the
handlers, in their call order) and src/frontend/rpc.go (the backend calls).
A route request is the parsed HTTP request the load generator sends:
``session_id`` (cookie, also the cart's user id), ``currency`` (the ``shop_currency`` cookie,
default USD), ``product_id``, ``quantity`` (form value, a string) and, for checkout, the form
fields ``email street_address zip_code city state country credit_card_number
credit_card_expiration_month credit_card_expiration_year credit_card_cvv`` (strings).
A response is ``{"status": <http status>, ...}``. Form input that fails validation is answered
with 422 and the validator's text (``validator.py``); a failed backend call raises through
``ctx.fail`` with INTERNAL (HTTP 500) after logging the Go error text (``renderHTTPError``).
"""

import money
import validator

DEFAULT_CURRENCY = "USD"
WHITELISTED_CURRENCIES = ("USD", "EUR", "CAD", "JPY", "GBP", "TRY")
MAX_RECOMMENDATIONS_SHOWN = 4
GO_CODES = {"CANCELLED": "Canceled", "UNKNOWN": "Unknown", "INVALID_ARGUMENT": "InvalidArgument",
            "DEADLINE_EXCEEDED": "DeadlineExceeded", "NOT_FOUND": "NotFound",
            "RESOURCE_EXHAUSTED": "ResourceExhausted", "FAILED_PRECONDITION": "FailedPrecondition",
            "UNIMPLEMENTED": "Unimplemented", "INTERNAL": "Internal", "UNAVAILABLE": "Unavailable",
            "UNAUTHENTICATED": "Unauthenticated", "PERMISSION_DENIED": "PermissionDenied"}


class BackendError(Exception):
    def __init__(self, message):
        self.message = message


def rpc_text(err):
    return f"rpc error: code = {GO_CODES.get(err.code, err.code)} desc = {err.message}"


def backend(ctx, env_name, method, request, describe, timeout_ms=None):
    try:
        return ctx.call(ctx.env(env_name), method, request, timeout_ms=timeout_ms)
    except ctx.RpcError as err:
        raise BackendError(joined(describe, rpc_text(err)))


def http_error(ctx, exc, code="INTERNAL"):
    """renderHTTPError: log the wrapped error and answer 500."""
    ctx.log("error", exc.message)
    ctx.fail(code, exc.message)


def user_currency(request):
    return request.get("currency") or DEFAULT_CURRENCY


def supported_currencies(ctx):
    codes = backend(ctx, "CURRENCY_SERVICE_ADDR", "GetSupportedCurrencies", {},
                    "could not retrieve currencies")["currency_codes"]
    return [code for code in codes if code in WHITELISTED_CURRENCIES]


def cart_items(ctx, session_id):
    cart = backend(ctx, "CART_SERVICE_ADDR", "GetCart", {"user_id": session_id},
                   "could not retrieve cart")
    return cart.get("items", [])


def get_product(ctx, product_id, describe="could not retrieve product"):
    return backend(ctx, "PRODUCT_CATALOG_SERVICE_ADDR", "GetProduct", {"id": product_id}, describe)


def convert(ctx, price, currency, describe="failed to convert currency"):
    """rpc.go convertCurrency: `avoidNoopCurrencyConversionRPC = false`, so even a price already
    in the shopper's currency goes through Convert."""
    return backend(ctx, "CURRENCY_SERVICE_ADDR", "Convert", {"from": price, "to_code": currency},
                   describe)


def recommendations(ctx, session_id, product_ids):
    """rpc.go getRecommendations: every recommended product is fetched, then the list is cut to
    the four the page shows. Errors come back unwrapped (the caller's text leads)."""
    response = backend(ctx, "RECOMMENDATION_SERVICE_ADDR", "ListRecommendations",
                       {"user_id": session_id, "product_ids": product_ids}, "")
    shown = []
    for product_id in response.get("product_ids", []):
        shown.append(get_product(ctx, product_id,
                                 f"failed to get recommended product info (#{product_id})"))
    return shown[:MAX_RECOMMENDATIONS_SHOWN]


def optional_recommendations(ctx, session_id, product_ids):
    """handlers.go: "ignores the error retrieving recommendations since it is not critical" -
    a warning, and the page renders without them."""
    try:
        return recommendations(ctx, session_id, product_ids)
    except BackendError as exc:
        ctx.log("warning", joined("failed to get product recommendations", exc.message))
        return []


def joined(describe, message):
    """errors.Wrap's "<describe>: <cause>"."""
    return f"{describe}: {message}" if describe else message


def ads(ctx, context_keys):
    """Ads are best effort: a failure is logged and the page renders without them."""
    try:
        return backend(ctx, "AD_SERVICE_ADDR", "GetAds", {"context_keys": context_keys},
                       "failed to get ads", timeout_ms=AD_TIMEOUT_MS).get("ads", [])
    except BackendError as exc:
        ctx.log("warning", joined("failed to retrieve ads", exc.message))
        return []


def cart_size(items):
    size = 0
    for item in items:
        size = size + item.get("quantity", 0)
    return size


def home(ctx, request):
    ctx.work(3.0)
    session_id = request.get("session_id", "")
    currency = user_currency(request)
    ctx.log("info", f"home page requested (currency={currency})")
    try:
        currencies = supported_currencies(ctx)
        products = backend(ctx, "PRODUCT_CATALOG_SERVICE_ADDR", "ListProducts", {},
                           "could not retrieve products")["products"]
        items = cart_items(ctx, session_id)
        shown = []
        for product in products:
            price = convert(ctx, product["price_usd"], currency,
                            "failed to do currency conversion for product " + product["id"])
            shown.append({"id": product["id"], "name": product["name"], "price": price})
    except BackendError as exc:
        http_error(ctx, exc)
    return {"status": 200, "products": shown, "currencies": currencies,
            "cart_size": cart_size(items), "ads": ads(ctx, [])}


def product(ctx, request):
    ctx.work(2.0)
    session_id = request.get("session_id", "")
    product_id = request.get("product_id", "")
    currency = user_currency(request)
    if not product_id:
        http_error(ctx, BackendError("product id not specified"), "INVALID_ARGUMENT")
    try:
        item = get_product(ctx, product_id)
        currencies = supported_currencies(ctx)
        items = cart_items(ctx, session_id)
        price = convert(ctx, item["price_usd"], currency, "failed to convert currency")
    except BackendError as exc:
        http_error(ctx, exc)
    recommended = optional_recommendations(ctx, session_id, [product_id])
    return {"status": 200, "product": {"id": item["id"], "name": item["name"], "price": price},
            "currencies": currencies, "cart_size": cart_size(items),
            "recommendations": [r["id"] for r in recommended],
            "ads": ads(ctx, item.get("categories", []))}


def view_cart(ctx, request):
    ctx.work(3.0)
    session_id = request.get("session_id", "")
    currency = user_currency(request)
    try:
        currencies = supported_currencies(ctx)
        items = cart_items(ctx, session_id)
    except BackendError as exc:
        http_error(ctx, exc)
    recommended = optional_recommendations(ctx, session_id, [i["product_id"] for i in items])
    try:
        shipping = shipping_quote(ctx, items, currency)
        total = money.add(money.zero(currency), shipping)
        lines = []
        for item in items:
            product_id = item["product_id"]
            found = get_product(ctx, product_id, f"could not retrieve product #{product_id}")
            price = convert(ctx, found["price_usd"], currency,
                            f"could not convert currency for product #{product_id}")
            line_total = money.multiply_slow(price, item["quantity"])
            total = money.add(total, line_total)
            lines.append({"product_id": product_id, "quantity": item["quantity"],
                          "price": line_total})
    except BackendError as exc:
        http_error(ctx, exc)
    return {"status": 200, "items": lines, "shipping_cost": shipping, "total": total,
            "currencies": currencies, "recommendations": [r["id"] for r in recommended]}


def shipping_quote(ctx, items, currency):
    """rpc.go getShippingQuote: the cart page has no address yet (`Address: nil`)."""
    quote = backend(ctx, "SHIPPING_SERVICE_ADDR", "GetQuote", {"items": items},
                    "failed to get shipping quote")
    try:
        return convert(ctx, quote["cost_usd"], currency,
                       "failed to convert currency for shipping cost")
    except BackendError as exc:
        raise BackendError(joined("failed to get shipping quote", exc.message))


def unprocessable(ctx, problems):
    """renderHTTPError(..., http.StatusUnprocessableEntity) with the validator's text."""
    ctx.log("error", problems)
    return {"status": 422, "error": problems}


def add_to_cart(ctx, request):
    ctx.work(1.5)
    session_id = request.get("session_id", "")
    product_id = request.get("product_id", "")
    quantity = validator.parse_uint(request.get("quantity", ""))
    problems = validator.add_to_cart(quantity, product_id)
    if problems:
        return unprocessable(ctx, problems)
    try:
        found = get_product(ctx, product_id)
        backend(ctx, "CART_SERVICE_ADDR", "AddItem",
                {"user_id": session_id,
                 "item": {"product_id": found["id"], "quantity": quantity}},
                "failed to add to cart")
    except BackendError as exc:
        http_error(ctx, exc)
    return {"status": 302, "location": "/cart"}


def form_int(request, name):
    return validator.parse_int(request.get(name, ""))


def checkout(ctx, request):
    ctx.work(2.0)
    session_id = request.get("session_id", "")
    currency = user_currency(request)
    form = {name: request.get(name, "") for name in (
        "email", "street_address", "city", "state", "country", "credit_card_number")}
    for name in ("zip_code", "credit_card_expiration_month", "credit_card_expiration_year",
                 "credit_card_cvv"):
        form[name] = form_int(request, name)
    problems = validator.place_order(form)
    if problems:
        return unprocessable(ctx, problems)
    order_request = {
        "email": form["email"],
        "address": {
            "street_address": form["street_address"],
            "city": form["city"],
            "state": form["state"],
            "country": form["country"],
            "zip_code": form["zip_code"],
        },
        "user_id": session_id,
        "user_currency": currency,
        "credit_card": {
            "credit_card_number": form["credit_card_number"],
            "credit_card_cvv": form["credit_card_cvv"],
            "credit_card_expiration_year": form["credit_card_expiration_year"],
            "credit_card_expiration_month": form["credit_card_expiration_month"],
        },
    }
    try:
        order = backend(ctx, "CHECKOUT_SERVICE_ADDR", "PlaceOrder", order_request,
                        "failed to complete the order")["order"]
    except BackendError as exc:
        http_error(ctx, exc)
    ctx.log("info", f"order placed (id={order['order_id']})")
    try:  # handlers.go placeOrderHandler drops this error without a word
        recommended = recommendations(ctx, session_id, [])
    except BackendError:
        recommended = []
    try:
        currencies = supported_currencies(ctx)
    except BackendError as exc:
        http_error(ctx, exc)
    total = order["shipping_cost"]
    for line in order["items"]:
        total = money.add(total, money.multiply_slow(line["cost"], line["item"]["quantity"]))
    return {"status": 200, "order_id": order["order_id"], "total": total,
            "tracking_id": order["shipping_tracking_id"], "currencies": currencies,
            "recommendations": [r["id"] for r in recommended]}


def set_currency(ctx, request):
    """Any ISO 4217 code passes (the whitelist only filters the currency menu)."""
    ctx.work(0.5)
    currency = request.get("currency_code", "")
    problems = validator.set_currency(currency)
    if problems:
        return unprocessable(ctx, problems)
    return {"status": 302, "location": request.get("referer") or "/",
            "set_cookie": {"shop_currency": currency}}


AD_TIMEOUT_MS = 100  # getAd's context.WithTimeout: the only deadline the shop sets on a call
# Calls a page survives: a failure is a warning and the page renders without them (handlers.go:
# recommendations are "not critical", chooseAd only logs)
WARNED_CALLS = ("RECOMMENDATION_SERVICE_ADDR", "AD_SERVICE_ADDR")

REQUIRED_ADDRESSES = ("PRODUCT_CATALOG_SERVICE_ADDR", "CURRENCY_SERVICE_ADDR", "CART_SERVICE_ADDR",
                      "RECOMMENDATION_SERVICE_ADDR", "CHECKOUT_SERVICE_ADDR", "SHIPPING_SERVICE_ADDR",
                      "AD_SERVICE_ADDR")


def init(ctx):
    """main(): mustMapEnv panics on an address that is not set, before the server listens."""
    for name in REQUIRED_ADDRESSES:
        if not ctx.env(name, ""):
            raise Exception(f"environment variable \"{name}\" not set")
