"""shipping: HTTP quotes and tracking ids (Rust, actix-web 4 server, awc 3 client).

Upstream: open-telemetry/opentelemetry-demo 2.2.0 src/shipping/src/shipping_service.rs (get_quote,
ship_order), shipping_service/quote.rs (create_quote_from_count, request_quote,
create_quote_from_float), shipping_service/shipping_types.rs (the serde request types) and
src/main.rs. A failed quote is a tonic::Status::unknown rendered with tonic's Display into a 500
body; a request body serde cannot read is actix's 400 `Json deserialize error: ...`.
"""

import hashlib
import json
import math

NANOS_MULTIPLE = 10000000  # shipping_service.rs
# shipping_types.rs Address: every field a required String (serde aliases for camelCase)
ADDRESS_FIELDS = (("street_address", "streetAddress"), ("city", "city"), ("state", "state"),
                  ("country", "country"), ("zip_code", "zipCode"))
DEFAULT_QUOTE_ADDR = "http://quote:8090"  # quote.rs: the code default, not the chart's
QUOTE_TIMEOUT_MS = 5000  # awc::Client::new() default timeout


class JsonError(Exception):
    def __init__(self, message):
        self.message = message


def column_of(body):
    """serde_json reports a missing field at the end of the object (line 1, the closing brace)."""
    return len(json.dumps(body, separators=(",", ":")))


def read_items(body):
    """serde: `items: Vec<CartItem>` with `product_id: String` (alias productId), `quantity: u32`."""
    if not hasattr(body, "keys"):
        raise JsonError("Json deserialize error: invalid type: expected struct GetQuoteRequest at line 1 column 1")
    if "items" not in body:
        raise JsonError(f"Json deserialize error: missing field `items` at line 1 column {column_of(body)}")
    items = []
    for item in body["items"]:
        product_id = item.get("product_id", item.get("productId"))
        if product_id is None:
            raise JsonError("Json deserialize error: missing field `product_id` at line 1 column "
                            f"{column_of(body)}")
        if "quantity" not in item:
            raise JsonError(f"Json deserialize error: missing field `quantity` at line 1 column {column_of(body)}")
        items.append({"product_id": product_id, "quantity": item["quantity"]})
    address = body.get("address")
    if address is not None:
        for name, alias in ADDRESS_FIELDS:
            if name not in address and alias not in address:
                raise JsonError(f"Json deserialize error: missing field `{name}` at line 1 column {column_of(body)}")
    return items


def status_display(message):
    """tonic::Status Display (`status: Unknown, message: {:?}, ...`)."""
    return (f"status: Unknown, message: {json.dumps(message, ensure_ascii=False)}, details: [], "
            "metadata: MetadataMap { headers: {} }")


def rust_parse_f64(body):
    """`str::parse::<f64>` of the response text: no surrounding whitespace, no JSON."""
    if isinstance(body, float) or (not isinstance(body, str) and not hasattr(body, "keys")
                                   and not hasattr(body, "append") and body is not None
                                   and not isinstance(body, bool)):
        return float(body)
    text = body if isinstance(body, str) else json.dumps(body)
    try:
        if text != text.strip() or not text:
            raise ValueError(text)
        return float(text)
    except ValueError:
        raise JsonError("Failed to parse quote value as f64")


def request_quote(ctx, count):
    url = (ctx.env("QUOTE_ADDR") or DEFAULT_QUOTE_ADDR) + "/getquote"
    ctx.log("info", f"Requesting quote quote_service_addr={url}")
    try:
        resp = ctx.http("POST", url, {"numberOfItems": count}, timeout_ms=QUOTE_TIMEOUT_MS)
    except ctx.HttpError as err:
        raise JsonError(f"Failed to call quote service: {err.message}")
    return rust_parse_f64(resp["body"])


def quote_from_float(value):
    """create_quote_from_float: dollars = floor, cents = (value*100 as u32) % 100."""
    cents = int(value * 100) % 100 if value > 0 else 0
    return int(math.floor(value)) if value > 0 else 0, cents


def get_quote(ctx, request):
    try:
        items = read_items(request.get("body"))
    except JsonError as err:
        return {"status": 400, "body": err.message}
    count = sum(item["quantity"] for item in items)
    try:
        value = request_quote(ctx, count)
    except JsonError as err:
        return {"status": 500, "body": f"Failed to get quote: {status_display(err.message)}"}
    dollars, cents = quote_from_float(value)
    ctx.log("info", f"Sending Quote quote.dollars={dollars} quote.cents={cents}")
    return {"cost_usd": {"currency_code": "USD", "units": dollars, "nanos": cents * NANOS_MULTIPLE}}


def tracking_id(ctx):
    """Uuid::new_v4()."""
    digest = hashlib.sha256(f"tracking:{ctx.request_id}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-a{digest[17:20]}-{digest[20:32]}"


def ship_order(ctx, request):
    try:
        read_items(request.get("body"))
    except JsonError as err:
        return {"status": 400, "body": err.message.replace("GetQuoteRequest", "ShipOrderRequest")}
    tid = tracking_id(ctx)
    ctx.log("info", f"Tracking ID Created tracking_id={tid}")
    return {"tracking_id": tid}


def init(ctx):
    """main.rs: SHIPPING_PORT must be set and a port number (`expect` panics)."""
    port = ctx.env("SHIPPING_PORT")
    if port is None:
        ctx.log("error", "thread 'main' panicked at src/main.rs:26:10:\n$SHIPPING_PORT is not set: NotPresent")
        raise ctx.Exit(101)
    kind = "Empty" if port == "" else "InvalidDigit" if not port.isdigit() else \
        "PosOverflow" if int(port) > 65535 else ""
    if kind:
        ctx.log("error", "thread 'main' panicked at src/main.rs:28:10:\n$SHIPPING_PORT is not a valid port: "
                         f"ParseIntError {{ kind: {kind} }}")
        raise ctx.Exit(101)
