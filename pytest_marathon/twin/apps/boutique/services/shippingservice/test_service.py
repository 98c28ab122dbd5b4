from testing import TestContext, raises

import service

ADDRESS = {"street_address": "1600 Amphitheatre Parkway", "city": "Mountain View",
           "state": "CA", "country": "United States", "zip_code": 94043}


def test_quote_for_a_basket_is_8_99():
    items = [{"product_id": "OLJCESPC7Z", "quantity": 3}]
    quote = service.GetQuote(TestContext(), {"address": ADDRESS, "items": items})
    assert quote["cost_usd"] == {"currency_code": "USD", "units": 8, "nanos": 990000000}


def test_empty_basket_ships_free():
    quote = service.GetQuote(TestContext(), {"address": ADDRESS, "items": []})
    assert quote["cost_usd"]["units"] == 0


def test_ship_order_returns_a_tracking_id():
    ctx = TestContext()
    response = service.ShipOrder(ctx, {"address": ADDRESS, "items": []})
    assert response["tracking_id"][2] == "-"
    assert ctx.logged("info")[-1] == "[ShipOrder] completed request"


def test_ship_order_needs_an_address():
    ctx = TestContext()
    with raises(ctx.RpcError):
        service.ShipOrder(ctx, {"address": {}, "items": []})
