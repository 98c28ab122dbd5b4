"""Pinned against GoogleCloudPlatform/microservices-demo v0.10.6 src/shippingservice (main.go,
quote.go, tracker.go)."""

import re

from testing import TestContext

import service

ADDRESS = {"street_address": "1600 Amphitheatre Parkway", "city": "Mountain View",
           "state": "CA", "country": "United States", "zip_code": 94043}


def test_quote_for_a_basket_is_8_99():
    items = [{"product_id": "OLJCESPC7Z", "quantity": 3}]
    quote = service.GetQuote(TestContext(), {"address": ADDRESS, "items": items})
    assert quote["cost_usd"] == {"currency_code": "USD", "units": 8, "nanos": 990000000}


def test_empty_basket_ships_free_and_no_address_is_needed():
    """The frontend's cart page quotes with `Address: nil` (rpc.go getShippingQuote)."""
    quote = service.GetQuote(TestContext(), {"items": []})
    assert quote["cost_usd"]["units"] == 0


def test_tracking_id_has_the_go_layout():
    ctx = TestContext()
    response = service.ShipOrder(ctx, {"address": ADDRESS, "items": []})
    salt = len("1600 Amphitheatre Parkway, Mountain View, CA")
    assert re.match(rf"^[A-Y]{{2}}-{salt}\d{{3}}-{salt // 2}\d{{7}}$", response["tracking_id"])
    assert ctx.logged("info")[-1] == "[ShipOrder] completed request"


def test_tracking_ids_differ_per_request():
    first = service.ShipOrder(TestContext(request_id="r1"), {"address": ADDRESS, "items": []})
    second = service.ShipOrder(TestContext(request_id="r2"), {"address": ADDRESS, "items": []})
    assert first["tracking_id"] != second["tracking_id"]
