from testing import TestContext, raises

import service

ENV = {"PRODUCT_CATALOG_SERVICE_ADDR": "productcatalogservice:3550",
       "CURRENCY_SERVICE_ADDR": "currencyservice:7000", "CART_SERVICE_ADDR": "cartservice:7070",
       "RECOMMENDATION_SERVICE_ADDR": "recommendationservice:8080",
       "SHIPPING_SERVICE_ADDR": "shippingservice:50051", "CHECKOUT_SERVICE_ADDR": "checkoutservice:5050",
       "AD_SERVICE_ADDR": "adservice:9555"}
MUG = {"id": "6E92ZMYYFZ", "name": "Mug", "categories": ["kitchen"],
       "price_usd": {"currency_code": "USD", "units": 8, "nanos": 990000000}}


def backends(**overrides):
    responses = {
        "GetSupportedCurrencies": {"currency_codes": ["EUR", "USD", "JPY"]},
        "ListProducts": {"products": [MUG]}, "GetProduct": MUG,
        "GetCart": {"user_id": "s1", "items": [{"product_id": "6E92ZMYYFZ", "quantity": 2}]},
        "Convert": lambda request: {"currency_code": request["to_code"], "units": 7, "nanos": 0},
        "GetAds": {"ads": []}, "ListRecommendations": {"product_ids": ["6E92ZMYYFZ"]},
        "GetQuote": {"cost_usd": {"currency_code": "USD", "units": 8, "nanos": 990000000}},
        "AddItem": {},
    }
    responses.update(overrides)
    return responses


def test_home_makes_the_reference_calls():
    ctx = TestContext(env=ENV, responses=backends())
    page = service.home(ctx, {"session_id": "s1", "currency": "EUR"})
    assert ctx.methods_called() == ["GetSupportedCurrencies", "ListProducts", "GetCart", "Convert",
                                    "GetAds"]
    assert page["products"][0]["price"]["currency_code"] == "EUR"
    assert page["cart_size"] == 2


def test_view_cart_totals_items_and_shipping():
    ctx = TestContext(env=ENV, responses=backends())
    page = service.view_cart(ctx, {"session_id": "s1", "currency": "USD"})
    assert page["total"] == {"currency_code": "USD", "units": 26, "nanos": 970000000}


def test_cart_failure_is_logged_with_the_go_error_text():
    down = TestContext.RpcError("UNAVAILABLE", DOWN)
    ctx = TestContext(env=ENV, responses=backends(GetCart=down))
    with raises(ctx.RpcError):
        service.home(ctx, {"session_id": "s1"})
    assert ctx.logged("error") == [
        "could not retrieve cart: rpc error: code = Unavailable desc = " + DOWN]


def test_add_to_cart_rejects_bad_quantity():
    ctx = TestContext(env=ENV, responses=backends())
    with raises(ctx.RpcError) as err:
        service.add_to_cart(ctx, {"session_id": "s1", "product_id": "6E92ZMYYFZ", "quantity": "x"})
    assert err.value.code == "INVALID_ARGUMENT"


def test_set_currency_sets_the_cookie():
    response = service.set_currency(TestContext(), {"currency_code": "JPY"})
    assert response["set_cookie"] == {"shop_currency": "JPY"}


# how grpc-go reports a Service with no ready endpoint (kube-proxy refuses the connection)
DOWN = ('connection error: desc = "transport: Error while dialing: dial tcp 10.12.0.12:7070: connect: connection refused"')
