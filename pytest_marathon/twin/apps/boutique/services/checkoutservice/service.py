"""checkoutservice: PlaceOrder orchestrates cart, catalog, currency, shipping, payment, email (Go)."""

import hashlib

import money

GO_CODES = {"OK": "OK", "CANCELLED": "Canceled", "UNKNOWN": "Unknown",
            "INVALID_ARGUMENT": "InvalidArgument", "DEADLINE_EXCEEDED": "DeadlineExceeded",
            "NOT_FOUND": "NotFound", "ALREADY_EXISTS": "AlreadyExists",
            "PERMISSION_DENIED": "PermissionDenied", "RESOURCE_EXHAUSTED": "ResourceExhausted",
            "FAILED_PRECONDITION": "FailedPrecondition", "ABORTED": "Aborted",
            "UNIMPLEMENTED": "Unimplemented", "INTERNAL": "Internal",
            "UNAVAILABLE": "Unavailable", "UNAUTHENTICATED": "Unauthenticated"}


class CheckoutError(Exception):
    def __init__(self, code, message):
        self.code = code
        self.message = message


def rpc_text(err):
    """How grpc-go prints a status error."""
    return f"rpc error: code = {GO_CODES.get(err.code, err.code)} desc = {err.message}"


def order_uuid(ctx, user_id):
    digest = hashlib.sha256(f"order:{ctx.request_id}:{user_id}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-8{digest[17:20]}-{digest[20:32]}"


def call(ctx, env_name, method, request, describe):
    try:
        return ctx.call(ctx.env(env_name), method, request)
    except ctx.RpcError as err:
        raise CheckoutError(*wrapped(describe, err))


def convert(ctx, price, currency, describe):
    if price.get("currency_code") == currency:
        return price
    return call(ctx, "CURRENCY_SERVICE_ADDR", "Convert", {"from": price, "to_code": currency},
                describe)


def prepare_order(ctx, user_id, currency, address):
    cart = call(ctx, "CART_SERVICE_ADDR", "GetCart", {"user_id": user_id},
                "cart failure: failed to get user cart during checkout")
    cart_items = cart.get("items", [])
    order_items = []
    for item in cart_items:
        product_id = item["product_id"]
        product = call(ctx, "PRODUCT_CATALOG_SERVICE_ADDR", "GetProduct", {"id": product_id},
                       f"failed to prepare order: failed to get product #\"{product_id}\"")
        cost = convert(ctx, product["price_usd"], currency,
                       f"failed to prepare order: failed to convert price of \"{product_id}\" "
                       f"to {currency}")
        order_items.append({"item": dict(item), "cost": cost})
    quote = call(ctx, "SHIPPING_SERVICE_ADDR", "GetQuote",
                 {"address": address, "items": cart_items},
                 "shipping quote failure: failed to get shipping quote")
    shipping = convert(ctx, quote["cost_usd"], currency,
                       "failed to convert shipping cost to currency")
    return cart_items, order_items, shipping


def order_total(currency, shipping, order_items):
    total = money.add(money.zero(currency), shipping)
    for line in order_items:
        total = money.add(total, money.multiply_slow(line["cost"], line["item"]["quantity"]))
    return total


def PlaceOrder(ctx, request):
    ctx.work(2.0)
    user_id = request.get("user_id", "")
    currency = request.get("user_currency", "USD")
    address = request.get("address", {})
    email = request.get("email", "")
    ctx.log("info", f"[PlaceOrder] user_id=\"{user_id}\" user_currency=\"{currency}\"")
    try:
        cart_items, order_items, shipping = prepare_order(ctx, user_id, currency, address)
        # money.Must: a money error panics, and the Go gRPC server does not recover it
        total = order_total(currency, shipping, order_items)
        payment = call(ctx, "PAYMENT_SERVICE_ADDR", "Charge",
                       {"amount": total, "credit_card": request.get("credit_card", {})},
                       "failed to charge card: could not charge the card")
        ctx.log("info", f"payment went through (transaction_id: {payment['transaction_id']})")
        shipment = call(ctx, "SHIPPING_SERVICE_ADDR", "ShipOrder",
                        {"address": address, "items": cart_items},
                        "shipping error: failed to ship order")
    except CheckoutError as exc:
        ctx.log("error", f"failed to place order: {exc.message}")
        ctx.fail(exc.code, exc.message)
    try:
        ctx.call(ctx.env("CART_SERVICE_ADDR"), "EmptyCart", {"user_id": user_id})
    except ctx.RpcError as err:
        ctx.log("warning", f"failed to empty user cart {user_id}: {rpc_text(err)}")
    order = {
        "order_id": order_uuid(ctx, user_id),
        "shipping_tracking_id": shipment["tracking_id"],
        "shipping_cost": shipping,
        "shipping_address": address,
        "items": order_items,
    }
    try:
        ctx.call(ctx.env("EMAIL_SERVICE_ADDR"), "SendOrderConfirmation",
                 {"email": email, "order": order})
        ctx.log("info", f"order confirmation email sent to \"{email}\"")
    except ctx.RpcError as err:
        ctx.log("warning", f"failed to send order confirmation to \"{email}\": {rpc_text(err)}")
    return {"order": order}


REQUIRED_ADDRESSES = ("SHIPPING_SERVICE_ADDR", "PRODUCT_CATALOG_SERVICE_ADDR", "CART_SERVICE_ADDR",
                      "CURRENCY_SERVICE_ADDR", "EMAIL_SERVICE_ADDR", "PAYMENT_SERVICE_ADDR")


def init(ctx):
    """main(): mustMapEnv panics on an address that is not set, before the server listens."""
    for name in REQUIRED_ADDRESSES:
        if not ctx.env(name, ""):
            raise Exception(f"environment variable \"{name}\" not set")


# How PlaceOrder words each failed step (main.go): most wrap the call's error; the product and
# price steps of prepOrderItems return their own text alone; a failed shipment is Unavailable.
BARE_STEPS = ("failed to prepare order: failed to get product #",
              "failed to prepare order: failed to convert price of ")
WORDING = {
    "failed to convert shipping cost to currency":
        ("INTERNAL", "failed to convert shipping cost to currency: failed to convert currency: {err}"),
    "shipping error: failed to ship order": ("UNAVAILABLE", "shipping error: shipment failed: {err}"),
}


def wrapped(describe, err):
    """(code, message) of the error PlaceOrder returns when the step `describe` failed with `err`."""
    if describe.startswith(BARE_STEPS):
        return "INTERNAL", describe
    code, text = WORDING.get(describe, ("INTERNAL", describe + ": {err}"))
    return code, text.format(err=rpc_text(err))
