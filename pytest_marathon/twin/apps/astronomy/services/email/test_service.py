"""Pinned against open-telemetry/opentelemetry-demo 2.2.0 src/email/email_server.rb."""

from testing import TestContext

import service

ORDER = {"order_id": "o-1", "shipping_tracking_id": "t-1",
         "shipping_cost": {"currency_code": "USD", "units": 17, "nanos": 980000000},
         "shipping_address": {"street_address": "1600 Amphitheatre Parkway", "city": "Mountain View",
                              "country": "United States", "zip_code": "94043"},
         "items": [{"item": {"product_id": "66VCHSJNUP", "quantity": 2},
                    "cost": {"currency_code": "USD", "units": 349, "nanos": 950000000}}]}


def confirm(ctx, order=ORDER, email="a@example.com"):
    """POST /send_order_confirmation as checkout sends it (main.go sendOrderConfirmation)."""
    body = {"email": email}
    if order is not None:
        body["order"] = order
    return service.send_order_confirmation(ctx, {"body": body})


def test_sends_and_logs_to_stdout():
    ctx = TestContext()
    assert confirm(ctx) == {"status": 200, "body": ""}
    assert ctx.logged("info") == ["Order confirmation email sent to: a@example.com"]
    assert service.DELIVERIES == []


def test_missing_order_is_a_sinatra_500():
    ctx = TestContext()
    assert confirm(ctx, None) == {"status": 500, "body": "<h1>Internal Server Error</h1>"}
    assert ctx.logged("error") == ["NoMethodError - undefined method 'order_id' for nil:"]


def test_missing_members_render_empty():
    ctx = TestContext()
    order = dict(ORDER)
    order.pop("shipping_tracking_id")
    assert confirm(ctx, order)["status"] == 200


def test_memory_leak_flag_keeps_deliveries():
    ctx = TestContext(flags={"emailMemoryLeak": 1})
    confirm(ctx)
    confirm(ctx)
    assert len(service.DELIVERIES) == 2
