"""Pinned against GoogleCloudPlatform/microservices-demo v0.10.6 src/emailservice/email_server.py
(DummyEmailService)."""

from testing import TestContext

import service

ORDER = {
    "order_id": "a1b2", "shipping_tracking_id": "AB-123-456",
    "shipping_cost": {"currency_code": "USD", "units": 8, "nanos": 990000000},
    "shipping_address": {"street_address": "1600 Amphitheatre Parkway", "city": "Mountain View",
                         "country": "United States", "zip_code": 94043},
    "items": [{"item": {"product_id": "6E92ZMYYFZ", "quantity": 2},
               "cost": {"currency_code": "USD", "units": 8, "nanos": 990000000}}],
}


def test_confirmation_is_logged():
    ctx = TestContext()
    assert service.SendOrderConfirmation(ctx, {"email": "someone@example.com", "order": ORDER}) == {}
    assert ctx.logged("info") == [
        "A request to send order confirmation email to someone@example.com has been received."]


def test_dummy_mode_validates_nothing():
    ctx = TestContext()
    assert service.SendOrderConfirmation(ctx, {"email": "not-an-address", "order": ORDER}) == {}
    assert ctx.logged("error") == []


def test_template_is_loaded_at_start():
    assert "<html" in service.TEMPLATE.lower()
