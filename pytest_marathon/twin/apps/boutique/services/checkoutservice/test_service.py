"""Pinned against GoogleCloudPlatform/microservices-demo v0.10.6 src/checkoutservice/main.go."""

from testing import TestContext, raises

import money
import service

ENV = {"CART_SERVICE_ADDR": "cartservice:7070", "PRODUCT_CATALOG_SERVICE_ADDR": "productcatalogservice:3550",
       "CURRENCY_SERVICE_ADDR": "currencyservice:7000", "SHIPPING_SERVICE_ADDR": "shippingservice:50051",
       "PAYMENT_SERVICE_ADDR": "paymentservice:50051", "EMAIL_SERVICE_ADDR": "emailservice:5000"}
MUG = {"id": "6E92ZMYYFZ", "price_usd": {"currency_code": "USD", "units": 8, "nanos": 990000000}}
SHIPPING = {"cost_usd": {"currency_code": "USD", "units": 8, "nanos": 990000000}}


def same_amount(request):
    return dict(request["from"], currency_code=request["to_code"])


def backends(**overrides):
    responses = {
        "GetCart": {"user_id": "u1", "items": [{"product_id": "6E92ZMYYFZ", "quantity": 2}]},
        "GetProduct": MUG, "GetQuote": SHIPPING, "Charge": {"transaction_id": "tx-1"},
        "Convert": same_amount,
        "ShipOrder": {"tracking_id": "AB-1-2"}, "EmptyCart": {}, "SendOrderConfirmation": {},
    }
    responses.update(overrides)
    return responses


def order_request():
    return {"user_id": "u1", "user_currency": "USD", "email": "someone@example.com",
            "address": {"street_address": "1600 Amphitheatre Parkway", "country": "United States"},
            "credit_card": {"credit_card_number": "4432801561520454"}}


def down():
    return TestContext.RpcError("UNAVAILABLE", "connection refused")


def test_place_order_converts_even_usd_to_usd():
    """convertCurrency has no shortcut: one Convert per line and one for shipping."""
    ctx = TestContext(env=ENV, responses=backends())
    response = service.PlaceOrder(ctx, order_request())
    assert ctx.methods_called() == ["GetCart", "GetProduct", "Convert", "GetQuote", "Convert",
                                    "Charge", "ShipOrder", "EmptyCart", "SendOrderConfirmation"]
    assert response["order"]["shipping_tracking_id"] == "AB-1-2"


def test_total_charged_is_items_plus_shipping():
    ctx = TestContext(env=ENV, responses=backends())
    service.PlaceOrder(ctx, order_request())
    charge = [call for call in ctx.calls if call["method"] == "Charge"][0]
    assert charge["request"]["amount"] == {"currency_code": "USD", "units": 26, "nanos": 970000000}


def test_cart_failure_fails_the_order_without_a_log():
    ctx = TestContext(env=ENV, responses=backends(GetCart=down()))
    with raises(ctx.RpcError) as err:
        service.PlaceOrder(ctx, order_request())
    assert err.value.code == "INTERNAL"
    assert err.value.message == ("cart failure: failed to get user cart during checkout: "
                                 "rpc error: code = Unavailable desc = connection refused")
    assert ctx.logged("error") == [] and ctx.logged("warning") == []


def test_product_failure_drops_the_cause():
    ctx = TestContext(env=ENV, responses=backends(GetProduct=down()))
    with raises(ctx.RpcError) as err:
        service.PlaceOrder(ctx, order_request())
    assert err.value.message == 'failed to prepare order: failed to get product #"6E92ZMYYFZ"'


def test_shipment_failure_is_unavailable():
    ctx = TestContext(env=ENV, responses=backends(ShipOrder=down()))
    with raises(ctx.RpcError) as err:
        service.PlaceOrder(ctx, order_request())
    assert err.value.code == "UNAVAILABLE"
    assert err.value.message.startswith("shipping error: shipment failed: rpc error")


def test_empty_cart_failure_is_ignored_silently():
    ctx = TestContext(env=ENV, responses=backends(EmptyCart=down()))
    assert service.PlaceOrder(ctx, order_request())["order"]["shipping_tracking_id"] == "AB-1-2"
    assert ctx.logged("warning") == [] and ctx.logged("error") == []


def test_money_add_carries_nanos():
    total = money.add({"currency_code": "USD", "units": 1, "nanos": 600000000},
                      {"currency_code": "USD", "units": 2, "nanos": 500000000})
    assert (total["units"], total["nanos"]) == (4, 100000000)


def test_place_order_survives_and_logs_only_the_warned_calls():
    """main.go PlaceOrder returns every failed call to its caller unlogged, except those in
    WARNED_CALLS (the confirmation email), which it logs as a warning and survives."""
    healthy = TestContext(env=ENV, responses=backends())
    service.PlaceOrder(healthy, order_request())
    for var, addr in sorted(ENV.items()):
        methods = {call["method"] for call in healthy.calls if call["addr"] == addr}
        ctx = TestContext(env=ENV, responses=backends(**{m: down() for m in methods}))
        survived = True
        try:
            service.PlaceOrder(ctx, order_request())
        except TestContext.RpcError:
            survived = False
        assert survived == (var in service.WARNED_CALLS), var
        assert bool(ctx.logged("warning")) == (var in service.WARNED_CALLS), var
        assert ctx.logged("error") == [], var
