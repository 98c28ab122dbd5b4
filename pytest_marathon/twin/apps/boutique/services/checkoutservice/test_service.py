from testing import TestContext, raises

import money
import service

ENV = {"CART_SERVICE_ADDR": "cartservice:7070", "PRODUCT_CATALOG_SERVICE_ADDR": "productcatalogservice:3550",
       "CURRENCY_SERVICE_ADDR": "currencyservice:7000", "SHIPPING_SERVICE_ADDR": "shippingservice:50051",
       "PAYMENT_SERVICE_ADDR": "paymentservice:50051", "EMAIL_SERVICE_ADDR": "emailservice:5000"}
MUG = {"id": "6E92ZMYYFZ", "price_usd": {"currency_code": "USD", "units": 8, "nanos": 990000000}}
SHIPPING = {"cost_usd": {"currency_code": "USD", "units": 8, "nanos": 990000000}}


def backends(**overrides):
    responses = {
        "GetCart": {"user_id": "u1", "items": [{"product_id": "6E92ZMYYFZ", "quantity": 2}]},
        "GetProduct": MUG, "GetQuote": SHIPPING, "Charge": {"transaction_id": "tx-1"},
        "ShipOrder": {"tracking_id": "AB-1-2"}, "EmptyCart": {}, "SendOrderConfirmation": {},
    }
    responses.update(overrides)
    return responses


def order_request():
    return {"user_id": "u1", "user_currency": "USD", "email": "someone@example.com",
            "address": {"street_address": "1600 Amphitheatre Parkway", "country": "United States"},
            "credit_card": {"credit_card_number": "4432-8015-6152-0454"}}


def test_place_order_calls_the_backends_in_order():
    ctx = TestContext(env=ENV, responses=backends())
    response = service.PlaceOrder(ctx, order_request())
    assert ctx.methods_called() == ["GetCart", "GetProduct", "GetQuote", "Charge", "ShipOrder",
                                    "EmptyCart", "SendOrderConfirmation"]
    assert response["order"]["shipping_tracking_id"] == "AB-1-2"


def test_total_charged_is_items_plus_shipping():
    ctx = TestContext(env=ENV, responses=backends())
    service.PlaceOrder(ctx, order_request())
    charge = [call for call in ctx.calls if call["method"] == "Charge"][0]
    assert charge["request"]["amount"] == {"currency_code": "USD", "units": 26, "nanos": 970000000}


def test_cart_failure_fails_the_order():
    ctx = TestContext(env=ENV, responses=backends(GetCart=ctx_error()))
    with raises(ctx.RpcError) as err:
        service.PlaceOrder(ctx, order_request())
    assert err.value.message.startswith("cart failure: failed to get user cart during checkout")


def test_money_add_carries_nanos():
    total = money.add({"currency_code": "USD", "units": 1, "nanos": 600000000},
                      {"currency_code": "USD", "units": 2, "nanos": 500000000})
    assert (total["units"], total["nanos"]) == (4, 100000000)


def ctx_error():
    return TestContext.RpcError("UNAVAILABLE", DOWN)


# how grpc-go reports a Service with no ready endpoint (kube-proxy refuses the connection)
DOWN = ('connection error: desc = "transport: Error while dialing: dial tcp 10.12.0.12:7070: connect: connection refused"')
