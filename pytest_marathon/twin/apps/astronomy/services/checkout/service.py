"""checkout: PlaceOrder orchestrates cart, catalog, currency, shipping (HTTP), payment, email (HTTP)
and the Kafka `orders` publish (Go, grpc-go server).

Upstream: open-telemetry/opentelemetry-demo 2.2.0 src/checkout/main.go (PlaceOrder,
prepareOrderItemsAndShippingQuoteFromCart, quoteShipping, prepOrderItems, convertCurrency,
chargeCard, shipOrder, sendOrderConfirmation, sendToPostProcessor, mustMapEnv) and
src/checkout/kafka/producer.go. The error texts are main.go's fmt.Errorf / status.Errorf wrappings
(including the "failed POST to email service" that the two shipping calls say, main.go:470, 590).
A failed order is returned to the frontend, never logged; a failed confirmation email is a warning
and the order succeeds; a failed Kafka write is an error log and the order succeeds.
`money.Must` panics (grpc-go has no recover, so the process dies): the MoneyError escapes here.
"""

import hashlib

import money

GO_CODES = {"OK": "OK", "CANCELLED": "Canceled", "UNKNOWN": "Unknown",
            "INVALID_ARGUMENT": "InvalidArgument", "DEADLINE_EXCEEDED": "DeadlineExceeded",
            "NOT_FOUND": "NotFound", "ALREADY_EXISTS": "AlreadyExists",
            "PERMISSION_DENIED": "PermissionDenied", "RESOURCE_EXHAUSTED": "ResourceExhausted",
            "FAILED_PRECONDITION": "FailedPrecondition", "ABORTED": "Aborted",
            "OUT_OF_RANGE": "OutOfRange", "UNIMPLEMENTED": "Unimplemented", "INTERNAL": "Internal",
            "UNAVAILABLE": "Unavailable", "DATA_LOSS": "DataLoss",
            "UNAUTHENTICATED": "Unauthenticated"}

# main.go main(): mustMapEnv order (CHECKOUT_PORT first, then the six addresses)
REQUIRED_ENV = ("CHECKOUT_PORT", "SHIPPING_ADDR", "PRODUCT_CATALOG_ADDR", "CART_ADDR",
                "CURRENCY_ADDR", "EMAIL_ADDR", "PAYMENT_ADDR")
KAFKA_TOPIC = "orders"  # kafka/producer.go Topic
BAD_PAYMENT_ADDRESS = "badAddress:50051"  # chargeCard with paymentUnreachable


class CheckoutError(Exception):
    """An error PlaceOrder returns: the gRPC code and the fmt.Errorf chain."""

    def __init__(self, message):
        self.message = message


def rpc_text(err):
    """How grpc-go prints a status error (%+v of a status error)."""
    return f"rpc error: code = {GO_CODES.get(err.code, err.code)} desc = {err.message}"


def is_object(value):
    return hasattr(value, "keys")


def is_array(value):
    return hasattr(value, "append")


def go_json(value):
    """encoding/json of the generated protobuf structs: every field is `omitempty`."""
    if is_object(value):
        out = {}
        for key, item in value.items():
            cleaned = go_json(item)
            if cleaned is None or cleaned is False or cleaned == "" or cleaned == 0 \
                    or (is_array(cleaned) or is_object(cleaned)) and len(cleaned) == 0:
                continue
            out[key] = cleaned
        return out
    if is_array(value):
        return [go_json(item) for item in value]
    return value


def order_uuid(ctx, user_id):
    """uuid.NewUUID(): a version-1 (time-based) UUID."""
    digest = hashlib.sha256(f"order:{ctx.request_id}:{user_id}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-1{digest[13:16]}-9{digest[17:20]}-{digest[20:32]}"


def rpc(ctx, addr, method, request):
    return ctx.call(addr, method, request)


def get_user_cart(ctx, user_id):
    try:
        cart = rpc(ctx, ctx.env("CART_ADDR"), "GetCart", {"user_id": user_id})
    except ctx.RpcError as err:
        raise CheckoutError(f"failed to get user cart during checkout: {rpc_text(err)}")
    return cart.get("items", [])


def convert_currency(ctx, amount, to_code):
    try:
        return rpc(ctx, ctx.env("CURRENCY_ADDR"), "Convert", {"from": amount, "to_code": to_code})
    except ctx.RpcError as err:
        raise CheckoutError(f"failed to convert currency: {rpc_text(err)}")


def prep_order_items(ctx, items, user_currency):
    """prepOrderItems: both messages drop the cause."""
    out = []
    for item in items:
        product_id = item.get("product_id", "")
        try:
            product = rpc(ctx, ctx.env("PRODUCT_CATALOG_ADDR"), "GetProduct", {"id": product_id})
        except ctx.RpcError:
            raise CheckoutError(f"failed to get product #\"{product_id}\"")
        try:
            price = convert_currency(ctx, product.get("price_usd", {}), user_currency)
        except CheckoutError:
            raise CheckoutError(f"failed to convert price of \"{product_id}\" to {user_currency}")
        out.append({"item": item, "cost": price})
    return out


def post_json(ctx, path_env, path, payload):
    """otelhttp.Post with the default client (no timeout); a transport error is Go's *url.Error."""
    try:
        return ctx.http("POST", ctx.env(path_env) + path, go_json(payload))
    except ctx.HttpError as err:
        raise CheckoutError(f"failed POST to {'email' if path_env == 'EMAIL_ADDR' else 'shipping'} "
                            f"service: {err.message}")


def quote_shipping(ctx, address, items):
    resp = post_json(ctx, "SHIPPING_ADDR", "/get-quote", {"address": address, "items": items})
    if resp["status"] != 200:
        raise CheckoutError(f"failed POST to email service: expected 200, got {resp['status']}")
    body = resp["body"]
    if not is_object(body):
        raise CheckoutError(f"failed to unmarshal shipping quote: {unmarshal_error(body)}")
    if not body.get("cost_usd"):
        raise CheckoutError("shipping quote missing cost_usd field")
    return body["cost_usd"]


def unmarshal_error(body):
    """encoding/json's error for a body that is not a JSON object."""
    if isinstance(body, str):
        text = body.strip()
        if not text:
            return "unexpected end of JSON input"
        return f"invalid character '{text[0]}' looking for beginning of value"
    kind = "array" if is_array(body) else "number"
    return f"json: cannot unmarshal {kind} into Go value of type struct {{ CostUsd *oteldemo.Money \"json:\\\"cost_usd\\\"\" }}"


def prepare_order(ctx, user_id, user_currency, address):
    """prepareOrderItemsAndShippingQuoteFromCart."""
    try:
        cart_items = get_user_cart(ctx, user_id)
    except CheckoutError as err:
        raise CheckoutError(f"cart failure: {err.message}")
    try:
        order_items = prep_order_items(ctx, cart_items, user_currency)
    except CheckoutError as err:
        raise CheckoutError(f"failed to prepare order: {err.message}")
    try:
        shipping_usd = quote_shipping(ctx, address, cart_items)
    except CheckoutError as err:
        raise CheckoutError(f"shipping quote failure: {err.message}")
    try:
        shipping = convert_currency(ctx, shipping_usd, user_currency)
    except CheckoutError as err:
        raise CheckoutError(f"failed to convert shipping cost to currency: {err.message}")
    return cart_items, order_items, shipping


def order_total(user_currency, shipping, order_items):
    """PlaceOrder's money.Must(money.Sum(...)) loop; a MoneyError is a panic."""
    total = money.add(money.zero(user_currency), shipping)
    for line in order_items:
        total = money.add(total, money.multiply_slow(line["cost"], line["item"].get("quantity", 0)))
    return total


def charge_card(ctx, total, card):
    addr = ctx.env("PAYMENT_ADDR")
    if ctx.flag("paymentUnreachable", False):
        addr = BAD_PAYMENT_ADDRESS
    try:
        charge = {"amount": total}
        if card is not None:  # a nil *CreditCardInfo is not sent
            charge["credit_card"] = card
        resp = rpc(ctx, addr, "Charge", charge)
    except ctx.RpcError as err:
        raise CheckoutError(f"could not charge the card: {rpc_text(err)}")
    return resp.get("transaction_id", "")


def ship_order(ctx, address, items):
    resp = post_json(ctx, "SHIPPING_ADDR", "/ship-order", {"address": address, "items": items})
    if resp["status"] != 200:
        raise CheckoutError(f"failed POST to email service: expected 200, got {resp['status']}")
    body = resp["body"]
    if not is_object(body):
        raise CheckoutError(f"failed to unmarshal ship order response: {unmarshal_error(body)}")
    if not body.get("tracking_id"):
        raise CheckoutError("ship order response missing tracking_id field")
    return body["tracking_id"]


def send_order_confirmation(ctx, email, order):
    resp = post_json(ctx, "EMAIL_ADDR", "/send_order_confirmation", {"email": email, "order": order})
    if resp["status"] != 200:
        raise CheckoutError(f"failed POST to email service: expected 200, got {resp['status']}")


def amount_float(amount):
    """The "%d.%02d" of units and nanos/1e9 (always 0): cents are lost (fixed after 2.2.0)."""
    return float(f"{amount.get('units', 0)}.00")


def send_duration(ctx):
    digest = hashlib.sha256(f"kafka:{ctx.request_id}".encode()).hexdigest()
    return f"{int(digest[:3], 16) / 10:.1f}µs"


def send_to_post_processor(ctx, order):
    """sendToPostProcessor: the async producer's Successes or Errors channel answers."""
    producer = ctx.kafka(ctx.env("KAFKA_ADDR"))
    try:
        offset = producer.send(KAFKA_TOPIC, order)
    except ctx.RpcError as err:
        ctx.log("error", f"Failed to write message: {err.message}")
        return
    ctx.log("info", f"Successful to write message. offset: {offset}, duration: {send_duration(ctx)}")
    copies = ctx.flag("kafkaQueueProblems", 0)
    if copies > 0:
        ctx.log("info", "Warning: FeatureFlag 'kafkaQueueProblems' is activated, overloading queue now.")
        for _ in range(copies):
            try:
                producer.send(KAFKA_TOPIC, order)
            except ctx.RpcError as err:
                ctx.log("error", f"Failed to write message: {err.message}")
        ctx.log("info", f"Done with #{copies} messages for overload simulation.")


def PlaceOrder(ctx, request):
    ctx.work(0.5)
    user_id = request.get("user_id", "")
    user_currency = request.get("user_currency", "")
    address = request.get("address", {})
    email = request.get("email", "")
    ctx.log("info", f"[PlaceOrder] user_id={user_id} user_currency={user_currency}")
    order_id = order_uuid(ctx, user_id)
    try:
        cart_items, order_items, shipping = prepare_order(ctx, user_id, user_currency, address)
    except CheckoutError as err:
        ctx.fail("INTERNAL", err.message)
    total = order_total(user_currency, shipping, order_items)
    try:
        tx_id = charge_card(ctx, total, request.get("credit_card"))
    except CheckoutError as err:
        ctx.fail("INTERNAL", f"failed to charge card: {err.message}")
    ctx.log("info", f"payment went through transaction_id={tx_id}")
    try:
        tracking_id = ship_order(ctx, address, cart_items)
    except CheckoutError as err:
        ctx.fail("UNAVAILABLE", f"shipping error: {err.message}")
    try:  # `_ = cs.emptyUserCart(ctx, req.UserId)`
        rpc(ctx, ctx.env("CART_ADDR"), "EmptyCart", {"user_id": user_id})
    except ctx.RpcError:
        pass
    order = {"order_id": order_id, "shipping_tracking_id": tracking_id, "shipping_cost": shipping,
             "shipping_address": address, "items": order_items}
    ctx.log("info", f"order placed app.order.id={order_id} "
                    f"app.shipping.amount={amount_float(shipping):g} "
                    f"app.order.amount={amount_float(total):g} "
                    f"app.order.items.count={len(order_items)} app.shipping.tracking.id={tracking_id}")
    try:
        send_order_confirmation(ctx, email, order)
        ctx.log("info", f"order confirmation email sent to \"{email}\"")
    except CheckoutError as err:
        ctx.log("warning", f"failed to send order confirmation to \"{email}\": {err.message}")
    if ctx.env("KAFKA_ADDR", ""):
        ctx.log("info", "sending to postProcessor")
        send_to_post_processor(ctx, go_json(order))
    return {"order": order}


def init(ctx):
    """main(): mustMapEnv panics on a missing variable before the server listens; KAFKA_ADDR is
    optional (empty: no publishing)."""
    for name in REQUIRED_ENV:
        if not ctx.env(name, ""):
            raise Exception(f"environment variable \"{name}\" not set")
