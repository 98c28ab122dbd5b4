"""email: order confirmation (Ruby 3.4, Sinatra 4 on Puma, Pony `via: :test`).

Upstream: open-telemetry/opentelemetry-demo 2.2.0 src/email/email_server.rb (POST
/send_order_confirmation, send_email, the `error` block) and views/confirmation.erb. The JSON is
parsed into OpenStructs, so a missing member reads as nil and only a method called on nil raises
(NoMethodError); Sinatra in production answers 500 and dump_errors writes `<Class> - <message>:`.
`emailMemoryLeak` keeps every delivery (padded) when the multiplier is not below 1.
"""

DELIVERIES = []  # Mail::TestMailer.deliveries (per process)
SINATRA_500 = "<h1>Internal Server Error</h1>"


class RubyError(Exception):
    """A Ruby exception raised in the route: its class and message."""

    def __init__(self, kind, message):
        self.kind = kind
        self.message = message


class NoMethodError(RubyError):
    def __init__(self, name, receiver="nil"):
        self.kind = "NoMethodError"
        self.message = f"undefined method '{name}' for {receiver}"


def member(value, name):
    """OpenStruct member access: nil for a missing member, NoMethodError on nil."""
    if value is None:
        raise NoMethodError(name)
    if not hasattr(value, "keys"):
        raise NoMethodError(name)
    return value.get(name)


def erb(value):
    return "" if value is None else str(value)


def render_confirmation(order):
    """views/confirmation.erb: order id, tracking id, shipping cost and address, one row per item."""
    cost = member(order, "shipping_cost")
    address = member(order, "shipping_address")
    rows = []
    for line in member(order, "items") or []:
        item = member(line, "item")
        price = member(line, "cost")
        rows.append(f"<tr><td>{erb(member(item, 'product_id'))}</td><td>{erb(member(item, 'quantity'))}</td>"
                    f"<td>{erb(member(price, 'units'))}.{erb(member(price, 'nanos'))} "
                    f"{erb(member(price, 'currency_code'))}</td></tr>")
    return ("<h2>Your Order Confirmation</h2><p>Thanks for shopping with us!<p>"
            f"<h3>Order ID</h3><p>{erb(member(order, 'order_id'))}</p>"
            f"<h3>Shipping</h3><p>{erb(member(order, 'shipping_tracking_id'))}</p>"
            f"<p>{erb(member(cost, 'units'))}.{erb(member(cost, 'nanos'))} {erb(member(cost, 'currency_code'))}</p>"
            f"<p>{erb(member(address, 'street_address_1'))}, {erb(member(address, 'street_address_2'))}, "
            f"{erb(member(address, 'city'))}, {erb(member(address, 'country'))} {erb(member(address, 'zip_code'))}</p>"
            f"<h3>Items</h3><table>{''.join(rows)}</table>")


def send_email(ctx, data):
    multiplier = ctx.flag("emailMemoryLeak", 0)
    content = render_confirmation(member(data, "order"))
    padding = max(0, len(content) * (multiplier - 1))
    DELIVERIES.append(content + " " * padding)
    if multiplier < 1:
        DELIVERIES.clear()
    ctx.log("info", f"Order confirmation email sent to: {erb(member(data, 'email'))}")


def send_order_confirmation(ctx, request):
    data = request.get("body")
    try:
        member(member(data, "order"), "order_id")  # the span attribute app.order.id
        send_email(ctx, data)
    except RubyError as err:
        ctx.log("error", f"{err.kind} - {err.message}:")
        return {"status": 500, "body": SINATRA_500}
    return {"status": 200, "body": ""}
