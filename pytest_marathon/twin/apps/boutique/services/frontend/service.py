"""frontend: the shop's HTTP routes (Go original). One handler per route named in app.yaml.

A route request is the parsed HTTP request the load generator sends:
``session_id`` (cookie, also the cart's user id), ``currency`` (the ``shop_currency`` cookie,
default USD), ``product_id``, ``quantity`` (form value, a string) and, for checkout, the form
fields ``email street_address zip_code city state country credit_card_number
credit_card_expiration_month credit_card_expiration_year credit_card_cvv`` (strings).
A response is ``{"status": <http status>, ...}``; errors raise through ``ctx.fail`` with
INVALID_ARGUMENT (HTTP 400), NOT_FOUND (404) or INTERNAL (500), after logging the Go error text.
"""

import money

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
        raise BackendError(f"{describe}: {rpc_text(err)}")


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
    if price.get("currency_code") == currency:
        return price
    return backend(ctx, "CURRENCY_SERVICE_ADDR", "Convert", {"from": price, "to_code": currency},
                   describe)


def recommendations(ctx, session_id, product_ids):
    response = backend(ctx, "RECOMMENDATION_SERVICE_ADDR", "ListRecommendations",
                       {"user_id": session_id, "product_ids": product_ids},
                       "failed to get product recommendations")
    shown = []
    for product_id in response.get("product_ids", [])[:MAX_RECOMMENDATIONS_SHOWN]:
        shown.append(get_product(ctx, product_id, "failed to get recommended product info"))
    return shown


def ads(ctx, context_keys):
    """Ads are best effort: a failure is logged and the page renders without them."""
    try:
        return backend(ctx, "AD_SERVICE_ADDR", "GetAds", {"context_keys": context_keys},
                       "failed to retrieve ads", timeout_ms=AD_TIMEOUT_MS).get("ads", [])
    except BackendError as exc:
        ctx.log("warning", exc.message)
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
        ctx.fail("INVALID_ARGUMENT", "product id not specified")
    try:
        item = get_product(ctx, product_id)
        currencies = supported_currencies(ctx)
        items = cart_items(ctx, session_id)
        price = convert(ctx, item["price_usd"], currency, "failed to convert currency")
    except BackendError as exc:
        http_error(ctx, exc)
    try:
        recommended = recommendations(ctx, session_id, [product_id])
    except BackendError as exc:
        ctx.log("warning", exc.message)
        recommended = []
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
        recommended = recommendations(ctx, session_id, [i["product_id"] for i in items])
        quote = backend(ctx, "SHIPPING_SERVICE_ADDR", "GetQuote",
                        {"address": {}, "items": items}, "failed to get shipping quote")
        shipping = convert(ctx, quote["cost_usd"], currency,
                           "failed to convert currency for shipping cost")
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


def parse_quantity(raw):
    text = str(raw).strip()
    if not text.isdigit():
        return 0
    return int(text)


def add_to_cart(ctx, request):
    ctx.work(1.5)
    session_id = request.get("session_id", "")
    product_id = request.get("product_id", "")
    quantity = parse_quantity(request.get("quantity", ""))
    if not product_id or quantity == 0 or quantity > 10:
        ctx.log("error", "invalid form input")
        ctx.fail("INVALID_ARGUMENT", "invalid form input")
    try:
        get_product(ctx, product_id)
        backend(ctx, "CART_SERVICE_ADDR", "AddItem",
                {"user_id": session_id, "item": {"product_id": product_id, "quantity": quantity}},
                "failed to add to cart")
    except BackendError as exc:
        http_error(ctx, exc)
    return {"status": 302, "location": "/cart"}


def form_int(request, name):
    text = str(request.get(name, "")).strip()
    return int(text) if text.isdigit() else 0


def checkout(ctx, request):
    ctx.work(2.0)
    session_id = request.get("session_id", "")
    currency = user_currency(request)
    order_request = {
        "email": request.get("email", ""),
        "address": {
            "street_address": request.get("street_address", ""),
            "city": request.get("city", ""),
            "state": request.get("state", ""),
            "country": request.get("country", ""),
            "zip_code": form_int(request, "zip_code"),
        },
        "user_id": session_id,
        "user_currency": currency,
        "credit_card": {
            "credit_card_number": request.get("credit_card_number", ""),
            "credit_card_cvv": form_int(request, "credit_card_cvv"),
            "credit_card_expiration_year": form_int(request, "credit_card_expiration_year"),
            "credit_card_expiration_month": form_int(request, "credit_card_expiration_month"),
        },
    }
    try:
        order = backend(ctx, "CHECKOUT_SERVICE_ADDR", "PlaceOrder", order_request,
                        "failed to complete the order")["order"]
    except BackendError as exc:
        http_error(ctx, exc)
    ctx.log("info", f"order placed (id={order['order_id']})")
    try:
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
    ctx.work(0.5)
    currency = request.get("currency_code", "")
    if currency not in WHITELISTED_CURRENCIES:
        ctx.log("error", f"invalid currency: {currency}")
        ctx.fail("INVALID_ARGUMENT", f"invalid currency: {currency}")
    return {"status": 302, "location": request.get("referer") or "/",
            "set_cookie": {"shop_currency": currency}}


AD_TIMEOUT_MS = 100  # getAd's context.WithTimeout: the only deadline the shop sets on a call
REQUIRED_ADDRESSES = ("PRODUCT_CATALOG_SERVICE_ADDR", "CURRENCY_SERVICE_ADDR", "CART_SERVICE_ADDR",
                      "RECOMMENDATION_SERVICE_ADDR", "CHECKOUT_SERVICE_ADDR", "SHIPPING_SERVICE_ADDR",
                      "AD_SERVICE_ADDR")


def init(ctx):
    """main(): mustMapEnv panics on an address that is not set, before the server listens."""
    for name in REQUIRED_ADDRESSES:
        if not ctx.env(name, ""):
            raise Exception(f"environment variable \"{name}\" not set")
