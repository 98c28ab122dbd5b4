"""Pinned against GoogleCloudPlatform/microservices-demo v0.10.6 src/frontend (handlers.go,
rpc.go, validator/validator.go)."""

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
        "Convert": lambda request: dict(request["from"], currency_code=request["to_code"]),
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


def test_a_usd_price_is_still_converted_for_a_usd_shopper():
    """rpc.go: avoidNoopCurrencyConversionRPC = false."""
    ctx = TestContext(env=ENV, responses=backends())
    service.home(ctx, {"session_id": "s1", "currency": "USD"})
    assert "Convert" in ctx.methods_called()


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


def test_view_cart_renders_with_recommendations_down():
    """handlers.go viewCartHandler: a recommendation failure is a warning."""
    down = TestContext.RpcError("UNAVAILABLE", "connection refused")
    ctx = TestContext(env=ENV, responses=backends(ListRecommendations=down))
    page = service.view_cart(ctx, {"session_id": "s1", "currency": "USD"})
    assert page["status"] == 200 and page["recommendations"] == []
    assert ctx.logged("warning") == ["failed to get product recommendations: rpc error: "
                                     "code = Unavailable desc = connection refused"]
    assert ctx.logged("error") == []


def test_all_recommended_products_are_fetched_then_four_shown():
    """rpc.go getRecommendations fetches every product, then keeps the first four."""
    ids = ["P1", "P2", "P3", "P4", "P5"]
    ctx = TestContext(env=ENV, responses=backends(
        ListRecommendations={"product_ids": ids},
        GetProduct=lambda request: dict(MUG, id=request["id"])))
    page = service.product(ctx, {"session_id": "s1", "product_id": "6E92ZMYYFZ"})
    assert page["recommendations"] == ids[:4]
    assert ctx.methods_called().count("GetProduct") == 6


def test_add_to_cart_answers_422_with_the_validator_text():
    ctx = TestContext(env=ENV, responses=backends())
    page = service.add_to_cart(ctx, {"session_id": "s1", "product_id": "", "quantity": "x"})
    assert page["status"] == 422
    assert ctx.logged("error") == ["Field 'Quantity' is invalid: required\n"
                                   "Field 'ProductID' is invalid: required\n"]
    assert ctx.calls == []
    page = service.add_to_cart(ctx, {"session_id": "s1", "product_id": "P", "quantity": "11"})
    assert page["error"].startswith("Field 'Quantity' is invalid: lte\n")


def checkout_form(**changes):
    form = {"session_id": "s1", "currency": "USD", "email": "someone@example.com",
            "street_address": "1600 Amphitheatre Parkway", "zip_code": "94043",
            "city": "Mountain View", "state": "CA", "country": "United States",
            "credit_card_number": "4432801561520454", "credit_card_expiration_month": "1",
            "credit_card_expiration_year": "2039", "credit_card_cvv": "672"}
    form.update(changes)
    return form


def test_checkout_validates_the_card_like_go_playground():
    """credit_card: groups split on spaces only, so a dashed number fails."""
    ctx = TestContext(env=ENV, responses=backends())
    page = service.checkout(ctx, checkout_form(credit_card_number="4432-8015-6152-0454",
                                               credit_card_expiration_month="13"))
    assert page["status"] == 422
    assert "Field 'CcNumber' is invalid: credit_card\nField 'CcMonth' is invalid: lte\n" in page["error"]
    spaced = service.checkout(ctx, checkout_form(credit_card_number="4432 8015 6152 0454",
                                                 email="bad"))
    assert spaced["error"].startswith("Field 'Email' is invalid: email\n")


def test_set_currency_takes_any_iso_4217_code():
    response = service.set_currency(TestContext(), {"currency_code": "CHF"})
    assert response["set_cookie"] == {"shop_currency": "CHF"}
    ctx = TestContext()
    assert service.set_currency(ctx, {"currency_code": "ABC"})["status"] == 422
    assert ctx.logged("error") == ["Field 'Currency' is invalid: iso4217\n"]


# how grpc-go reports a Service with no ready endpoint (kube-proxy refuses the connection)
DOWN = ('connection error: desc = "transport: Error while dialing: dial tcp 10.12.0.12:7070: connect: connection refused"')


def test_a_page_survives_only_the_warned_calls():
    """WARNED_CALLS are the backends a page does without (a warning, the page renders: handlers.go
    "not critical", chooseAd); a failure of any other backend a page calls fails it."""
    pages = [(service.home, {"session_id": "s1", "currency": "EUR"}),
             (service.product, {"session_id": "s1", "product_id": "6E92ZMYYFZ"})]
    healthy = TestContext(env=ENV, responses=backends())
    for handler, request in pages:
        handler(healthy, dict(request))
    down = TestContext.RpcError("UNAVAILABLE", "connection refused")
    for var, addr in sorted(ENV.items()):
        methods = {call["method"] for call in healthy.calls if call["addr"] == addr}
        if not methods:
            continue
        survived = True
        warned = False
        for handler, request in pages:
            ctx = TestContext(env=ENV, responses=backends(**{m: down for m in methods}))
            try:
                handler(ctx, dict(request))
            except TestContext.RpcError:
                survived = False
            warned = warned or bool(ctx.logged("warning"))
        assert survived == (var in service.WARNED_CALLS), var
        assert warned or var not in service.WARNED_CALLS, var
