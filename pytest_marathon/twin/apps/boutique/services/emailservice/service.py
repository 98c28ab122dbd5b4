"""emailservice: renders the order confirmation (Python original, dummy mode: logs, no SMTP)."""

import re

TEMPLATE = resource("confirmation.html")
PLACEHOLDER = re.compile(r"\$([a-z_]+)")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def money_text(money):
    return f"{money.get('currency_code', '')} {money.get('units', 0)}." \
           f"{str(money.get('nanos', 0) // 10000000).rjust(2, '0')}"


def render(order):
    address = order.get("shipping_address", {})
    rows = "".join(
        f"<tr><td>#{item['item']['product_id']}</td><td>{item['item']['quantity']}</td>"
        f"<td>{money_text(item.get('cost', {}))}</td></tr>"
        for item in order.get("items", []))
    values = {
        "order_id": order.get("order_id", ""),
        "shipping_tracking_id": order.get("shipping_tracking_id", ""),
        "shipping_cost": money_text(order.get("shipping_cost", {})),
        "street_address": address.get("street_address", ""),
        "city": address.get("city", ""),
        "country": address.get("country", ""),
        "zip_code": str(address.get("zip_code", "")),
        "rows": rows,
    }
    return PLACEHOLDER.sub(lambda match: values[match.group(1)], TEMPLATE)


def SendOrderConfirmation(ctx, request):
    ctx.work(1.5)
    email = request.get("email", "")
    ctx.log("info", f"A request to send order confirmation email to {email} has been received.")
    if not EMAIL.match(email):
        ctx.fail("INVALID_ARGUMENT", f"invalid email address: {email}")
    try:
        render(request.get("order", {}))
    except KeyError as exc:
        ctx.log("error", f"An error occurred when preparing the confirmation mail: {exc}")
        ctx.fail("INTERNAL", "An error occurred when preparing the confirmation mail.")
    return {}
