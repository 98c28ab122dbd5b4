from testing import TestContext, raises

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
    assert "someone@example.com" in ctx.logged("info")[0]


def test_render_lists_items_and_cost():
    html = service.render(ORDER)
    assert "#6E92ZMYYFZ" in html
    assert "USD 8.99" in html


def test_invalid_email_is_rejected():
    ctx = TestContext()
    with raises(ctx.RpcError) as err:
        service.SendOrderConfirmation(ctx, {"email": "not-an-address", "order": ORDER})
    assert err.value.code == "INVALID_ARGUMENT"
