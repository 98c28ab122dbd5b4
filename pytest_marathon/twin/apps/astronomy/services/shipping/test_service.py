"""Pinned against open-telemetry/opentelemetry-demo 2.2.0 src/shipping/src (shipping_service.rs, quote.rs)."""

from testing import TestContext, TestHttpError, raises

import service

ENV = {"SHIPPING_PORT": "8080", "QUOTE_ADDR": "http://quote:8080"}
QUOTE_REQUEST = {"body": {"address": {"street_address": "1 Main", "city": "X", "state": "CA",
                                      "country": "US", "zip_code": "1"},
                          "items": [{"product_id": "66VCHSJNUP", "quantity": 2}, {"product_id": "9SIQT8TOJO", "quantity": 1}]}}


def test_quote_sums_quantities_and_splits_cents():
    ctx = TestContext(env=ENV, http={"POST /getquote": lambda r: {"status": 200, "body": 8.99 * r["body"]["numberOfItems"]}})
    reply = service.get_quote(ctx, QUOTE_REQUEST)
    assert ctx.requests[0]["body"] == {"numberOfItems": 3}
    assert ctx.requests[0]["url"] == "http://quote:8080/getquote"
    assert reply == {"cost_usd": {"currency_code": "USD", "units": 26, "nanos": 970000000}}


def test_quote_addr_default_is_8090():
    ctx = TestContext(env={"SHIPPING_PORT": "8080"}, http={"POST /getquote": {"status": 200, "body": 8.99}})
    service.get_quote(ctx, QUOTE_REQUEST)
    assert ctx.requests[0]["url"] == "http://quote:8090/getquote"


def test_refused_quote_is_a_500_with_tonic_display():
    down = TestHttpError("refused", "Failed to connect to host: Connection refused (os error 111)")
    ctx = TestContext(env=ENV, http={"POST /getquote": down})
    reply = service.get_quote(ctx, QUOTE_REQUEST)
    assert reply == {"status": 500, "body": 'Failed to get quote: status: Unknown, message: "Failed to call quote '
                                            'service: Failed to connect to host: Connection refused (os error 111)", '
                                            "details: [], metadata: MetadataMap { headers: {} }"}


def test_non_numeric_quote_body():
    ctx = TestContext(env=ENV, http={"POST /getquote": {"status": 500, "body": "<html>Slim Application Error</html>"}})
    reply = service.get_quote(ctx, QUOTE_REQUEST)
    assert reply["status"] == 500 and '"Failed to parse quote value as f64"' in reply["body"]


def test_missing_items_is_actix_400():
    ctx = TestContext(env=ENV)
    reply = service.get_quote(ctx, {"body": {"address": None}})
    assert reply["status"] == 400
    assert reply["body"].startswith("Json deserialize error: missing field `items` at line 1 column")


def test_ship_order_returns_a_tracking_id_without_calls():
    ctx = TestContext(env=ENV)
    reply = service.ship_order(ctx, QUOTE_REQUEST)
    assert len(reply["tracking_id"]) == 36 and ctx.requests == []


def test_port_must_be_set():
    with raises(TestContext.Exit):
        service.init(TestContext(env={}))
    service.init(TestContext(env=ENV))
