"""checkoutservice: PlaceOrder orchestrates cart, catalog, currency, shipping, payment, email (Go).

Upstream: GoogleCloudPlatform/microservices-demo v0.10.6 src/checkoutservice/main.go
(PlaceOrder, prepareOrderItemsAndShippingQuoteFromCart, prepOrderItems and the RPC helpers): the
error texts below are its fmt.Errorf wrappings; a failed order is returned, never logged.
"""

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


def call(ctx, env_name, method, request, describe, code="INTERNAL", with_cause=True):
    """One RPC; a failure becomes `describe` (plus ": <rpc error>" where main.go wraps it
    with %+v) under `code`."""
    try:
        return ctx.call(ctx.env(env_name), method, request)
    except ctx.RpcError as err:
        raise CheckoutError(code, f"{describe}: {rpc_text(err)}" if with_cause else describe)


def convert(ctx, price, currency, describe, with_cause=True):
    """main.go convertCurrency: always a Convert call, even from USD to USD."""
    return call(ctx, "CURRENCY_SERVICE_ADDR", "Convert", {"from": price, "to_code": currency},
                describe, with_cause=with_cause)


def prepare_order(ctx, user_id, currency, address):
    cart = call(ctx, "CART_SERVICE_ADDR", "GetCart", {"user_id": user_id},
                "cart failure: failed to get user cart during checkout")
    cart_items = cart.get("items", [])
    order_items = []
    for item in cart_items:
        product_id = item["product_id"]
        # prepOrderItems drops the RPC error from both of its messages
        product = call(ctx, "PRODUCT_CATALOG_SERVICE_ADDR", "GetProduct", {"id": product_id},
                       f"failed to prepare order: failed to get product #\"{product_id}\"",
                       with_cause=False)
        cost = convert(ctx, product["price_usd"], currency,
                       f"failed to prepare order: failed to convert price of \"{product_id}\" "
                       f"to {currency}", with_cause=False)
        order_items.append({"item": dict(item), "cost": cost})
    quote = call(ctx, "SHIPPING_SERVICE_ADDR", "GetQuote",
                 {"address": address, "items": cart_items},
                 "shipping quote failure: failed to get shipping quote")
    shipping = convert(ctx, quote["cost_usd"], currency,
                       "failed to convert shipping cost to currency: failed to convert currency")
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
        total = order_total(currency, shipping, order_items)  # money.Must: a panic on error
        payment = call(ctx, "PAYMENT_SERVICE_ADDR", "Charge",
                       {"amount": total, "credit_card": request.get("credit_card", {})},
                       "failed to charge card: could not charge the card")
        ctx.log("info", f"payment went through (transaction_id: {payment['transaction_id']})")
        shipment = call(ctx, "SHIPPING_SERVICE_ADDR", "ShipOrder",
                        {"address": address, "items": cart_items},
                        "shipping error: shipment failed", code="UNAVAILABLE")
    except CheckoutError as exc:
        ctx.fail(exc.code, exc.message)
    try:  # `_ = cs.emptyUserCart(...)`: the result is dropped
        ctx.call(ctx.env("CART_SERVICE_ADDR"), "EmptyCart", {"user_id": user_id})
    except ctx.RpcError:
        pass
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


# The one failed call PlaceOrder logs (a warning) and survives; every other failure is returned
# to the frontend unlogged (main.go PlaceOrder)
WARNED_CALLS = ("EMAIL_SERVICE_ADDR",)

REQUIRED_ADDRESSES = ("SHIPPING_SERVICE_ADDR", "PRODUCT_CATALOG_SERVICE_ADDR", "CART_SERVICE_ADDR",
                      "CURRENCY_SERVICE_ADDR", "EMAIL_SERVICE_ADDR", "PAYMENT_SERVICE_ADDR")


def init(ctx):
    """main(): mustMapEnv panics on an address that is not set, before the server listens."""
    for name in REQUIRED_ADDRESSES:
        if not ctx.env(name, ""):
            raise Exception(f"environment variable \"{name}\" not set")

