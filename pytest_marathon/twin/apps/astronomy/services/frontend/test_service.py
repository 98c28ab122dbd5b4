"""Pinned against open-telemetry/opentelemetry-demo 2.2.0 src/frontend/pages/api and gateways."""

from testing import TestContext, TestHttpError, TestRpcError

import service

ENV = {"AD_ADDR": "ad:8080", "CART_ADDR": "cart:8080", "CHECKOUT_ADDR": "checkout:8080",
       "CURRENCY_ADDR": "currency:8080", "PRODUCT_CATALOG_ADDR": "product-catalog:8080",
       "RECOMMENDATION_ADDR": "recommendation:8080", "SHIPPING_ADDR": "http://shipping:8080"}
LENS = {"id": "9SIQT8TOJO", "name": "Optical Tube Assembly", "picture": "OpticalTubeAssembly.jpg",
        "price_usd": {"currency_code": "USD", "units": 3599}, "categories": ["accessories"]}


def req(query=None, params=None, body=None):
    return {"method": "GET", "path": "/", "query": query or {}, "params": params or {}, "body": body, "headers": {}}


def test_home_calls_nothing():
    ctx = TestContext(env=ENV)
    assert service.home(ctx, req())["status"] == 200 and ctx.calls == []


def test_product_without_currency_skips_convert():
    ctx = TestContext(env=ENV, responses={"GetProduct": LENS})
    out = service.product(ctx, req(params={"productId": "9SIQT8TOJO"}))
    assert ctx.methods_called() == ["GetProduct"]
    assert out["priceUsd"] == {"currencyCode": "USD", "units": 3599}


def test_product_in_chf_converts():
    ctx = TestContext(env=ENV, responses={"GetProduct": LENS, "Convert": lambda r: dict(r["from"], currency_code="CHF")})
    out = service.product(ctx, req(query={"currencyCode": "CHF"}, params={"productId": "9SIQT8TOJO"}))
    assert out["priceUsd"]["currencyCode"] == "CHF"


def test_backend_failure_is_500_with_grpc_js_text():
    down = TestRpcError("UNAVAILABLE", "No connection established. Last error: connect ECONNREFUSED 10.96.0.8:8080")
    ctx = TestContext(env=ENV, responses={"GetProduct": down})
    assert service.product(ctx, req(params={"productId": "X"})) == {"status": 500, "body": "Internal Server Error"}
    assert ctx.logged("error") == ["Error: 14 UNAVAILABLE: No connection established. Last error: "
                                   "connect ECONNREFUSED 10.96.0.8:8080"]


def test_add_to_cart_then_get_cart():
    ctx = TestContext(env=ENV, responses={"AddItem": {}, "GetCart": {"user_id": "u", "items": [{"product_id": "X", "quantity": 2}]}})
    out = service.add_to_cart(ctx, req(body={"item": {"productId": "X", "quantity": 2}, "userId": "u"}))
    assert ctx.calls[0]["request"] == {"user_id": "u", "item": {"product_id": "X", "quantity": 2}}
    assert out == {"userId": "u", "items": [{"productId": "X", "quantity": 2}]}


def test_view_cart_without_session():
    ctx = TestContext(env=ENV, responses={"GetCart": {"user_id": "", "items": []}})
    assert service.get_cart(ctx, req()) == {"userId": "", "items": []}
    assert ctx.calls[0]["request"] == {"user_id": ""}


def test_checkout_places_order_and_looks_products_up():
    order = {"order_id": "o", "shipping_tracking_id": "t", "items": [{"item": {"product_id": "9SIQT8TOJO", "quantity": 1},
                                                                    "cost": LENS["price_usd"]}]}
    ctx = TestContext(env=ENV, responses={"PlaceOrder": {"order": order}, "GetProduct": LENS})
    body = {"email": "a@example.com", "userCurrency": "USD", "userId": "u",
            "creditCard": {"creditCardNumber": "4432-8015-6152-0454"}, "address": {"zipCode": "94043"}}
    out = service.checkout(ctx, req(body=body))
    sent = ctx.calls[0]["request"]
    assert sent["user_currency"] == "USD" and sent["credit_card"]["credit_card_number"] == "4432-8015-6152-0454"
    assert sent["address"] == {"zip_code": "94043"}
    assert out["orderId"] == "o" and out["items"][0]["item"]["product"]["id"] == "9SIQT8TOJO"


def test_checkout_failure_relays_the_status():
    failed = TestRpcError("INTERNAL", "failed to charge card: could not charge the card: rpc error: code = Unknown desc = x")
    ctx = TestContext(env=ENV, responses={"PlaceOrder": failed})
    assert service.checkout(ctx, req(body={}))["status"] == 500
    assert ctx.logged("error")[0].startswith("Error: 13 INTERNAL: failed to charge card")


def test_recommendations_first_four():
    ctx = TestContext(env=ENV, responses={"ListRecommendations": {"product_ids": ["A", "B", "C", "D", "E"]},
                                          "GetProduct": lambda r: dict(LENS, id=r["id"])})
    out = service.recommendations(ctx, req(query={"productIds": "9SIQT8TOJO"}))
    assert [p["id"] for p in out] == ["A", "B", "C", "D"]
    assert ctx.calls[0]["request"]["product_ids"][:3] == ["9", "S", "I"]


def test_ads_split_context_keys():
    ctx = TestContext(env=ENV, responses={"GetAds": {"ads": [{"redirect_url": "/product/X", "text": "t"}]}})
    assert service.ads(ctx, req(query={"contextKeys": "telescopes"})) == [{"redirectUrl": "/product/X", "text": "t"}]
    assert ctx.calls[0]["request"] == {"context_keys": ["telescopes"]}
    service.ads(ctx, req())
    assert ctx.calls[1]["request"] == {"context_keys": []}


def test_shipping_quote_then_convert_always():
    ctx = TestContext(env=ENV, responses={"Convert": lambda r: dict(r["from"], currency_code=r["to_code"])},
                      http={"POST /get-quote": {"status": 200, "body": {"cost_usd": {"currency_code": "USD", "units": 8, "nanos": 990000000}}}})
    out = service.shipping(ctx, req(query={"itemList": '[{"productId":"X","quantity":1}]', "address": '{"zipCode":"1"}'}))
    assert out == {"currencyCode": "USD", "units": 8, "nanos": 990000000}
    assert ctx.requests[0]["body"]["items"] == [{"product_id": "X", "quantity": 1}]


def test_shipping_non_2xx_error_text():
    ctx = TestContext(env=ENV, http={"POST /get-quote": {"status": 500, "body": "Failed to get quote: x"}})
    assert service.shipping(ctx, req(query={"itemList": "[]", "address": "{}"}))["status"] == 500
    assert ctx.logged("error") == ["Error: HTTP error: 500 Internal Server Error - Failed to get quote: x"]
    ctx = TestContext(env=ENV, http={"POST /get-quote": TestHttpError("refused", "connect ECONNREFUSED 10.96.0.2:8080")})
    service.shipping(ctx, req(query={"itemList": "[]", "address": "{}"}))
    assert ctx.logged("error")[0].startswith("TypeError: fetch failed")
