"""Pinned against open-telemetry/opentelemetry-demo 2.2.0 src/checkout/main.go."""

from testing import TestContext, TestHttpError, TestRpcError, raises

import money
import service

ENV = {"CHECKOUT_PORT": "8080", "CART_ADDR": "cart:8080", "CURRENCY_ADDR": "currency:8080",
       "EMAIL_ADDR": "http://email:8080", "PAYMENT_ADDR": "payment:8080",
       "PRODUCT_CATALOG_ADDR": "product-catalog:8080", "SHIPPING_ADDR": "http://shipping:8080",
       "KAFKA_ADDR": "kafka:9092"}
TELESCOPE = {"id": "66VCHSJNUP", "price_usd": {"currency_code": "USD", "units": 349, "nanos": 950000000}}
QUOTE = {"status": 200, "body": {"cost_usd": {"currency_code": "USD", "units": 17, "nanos": 980000000}}}


def same_amount(request):
    return dict(request["from"], currency_code=request["to_code"])


def backends(**overrides):
    responses = {"GetCart": {"user_id": "u1", "items": [{"product_id": "66VCHSJNUP", "quantity": 2}]},
                 "GetProduct": TELESCOPE, "Convert": same_amount, "Charge": {"transaction_id": "tx-1"},
                 "EmptyCart": {}}
    responses.update(overrides)
    return responses


def http():
    return {"POST /get-quote": QUOTE, "POST /ship-order": {"status": 200, "body": {"tracking_id": "t-1"}},
            "POST /send_order_confirmation": {"status": 200, "body": ""}}


def context(responses=None, answers=None, **kwargs):
    return TestContext(env=ENV, responses=responses or backends(), http=answers or http(), **kwargs)


def order_request(currency="USD"):
    return {"user_id": "u1", "user_currency": currency, "email": "larry_sergei@example.com",
            "address": {"street_address": "1600 Amphitheatre Parkway", "city": "Mountain View",
                        "state": "CA", "country": "United States", "zip_code": "94043"},
            "credit_card": {"credit_card_number": "4432-8015-6152-0454"}}


def refused():
    return TestRpcError("UNAVAILABLE", "connection error: desc = \"transport: Error while dialing: "
                                       "dial tcp 10.96.0.7:8080: connect: connection refused\"")


def test_order_sequence_converts_even_usd():
    ctx = context()
    response = service.PlaceOrder(ctx, order_request())
    assert ctx.methods_called() == ["GetCart", "GetProduct", "Convert", "Convert", "Charge", "EmptyCart"]
    assert [r["url"] for r in ctx.requests] == ["http://shipping:8080/get-quote", "http://shipping:8080/ship-order",
                                                "http://email:8080/send_order_confirmation"]
    assert response["order"]["shipping_tracking_id"] == "t-1"
    assert ctx.sent[0][0] == "orders" and ctx.sent[0][1]["order_id"] == response["order"]["order_id"]


def test_total_is_items_plus_shipping():
    ctx = context()
    service.PlaceOrder(ctx, order_request())
    charge = [c for c in ctx.calls if c["method"] == "Charge"][0]
    assert charge["request"]["amount"] == {"currency_code": "USD", "units": 717, "nanos": 880000000}


def test_quote_body_is_go_json_with_omitempty():
    ctx = context(responses=backends(GetCart={"items": [{"product_id": "66VCHSJNUP", "quantity": 1}]}))
    request = order_request()
    request["address"]["zip_code"] = ""
    service.PlaceOrder(ctx, request)
    body = ctx.requests[0]["body"]
    assert "zip_code" not in body["address"] and body["items"] == [{"product_id": "66VCHSJNUP", "quantity": 1}]


def test_cart_failure_is_internal_and_not_logged():
    ctx = context(responses=backends(GetCart=refused()))
    with raises(ctx.RpcError) as err:
        service.PlaceOrder(ctx, order_request())
    assert err.value.code == "INTERNAL"
    assert err.value.message.startswith("cart failure: failed to get user cart during checkout: "
                                        "rpc error: code = Unavailable desc = connection error")
    assert ctx.logged("error") == [] and ctx.logged("warning") == []


def test_product_and_convert_failures_drop_the_cause():
    ctx = context(responses=backends(GetProduct=refused()))
    with raises(ctx.RpcError) as err:
        service.PlaceOrder(ctx, order_request())
    assert err.value.message == 'failed to prepare order: failed to get product #"66VCHSJNUP"'
    ctx = context(responses=backends(Convert=refused()))
    with raises(ctx.RpcError) as err:
        service.PlaceOrder(ctx, order_request("EUR"))
    assert err.value.message == 'failed to prepare order: failed to convert price of "66VCHSJNUP" to EUR'


def test_shipping_quote_transport_error_and_the_email_slip():
    down = TestHttpError("refused", 'Post "http://shipping:8080/get-quote": dial tcp 10.96.0.9:8080: '
                                    "connect: connection refused")
    ctx = context(answers=dict(http(), **{"POST /get-quote": down}))
    with raises(ctx.RpcError) as err:
        service.PlaceOrder(ctx, order_request())
    assert err.value.code == "INTERNAL"
    assert err.value.message == ('shipping quote failure: failed POST to shipping service: Post '
                                 '"http://shipping:8080/get-quote": dial tcp 10.96.0.9:8080: connect: connection refused')
    ctx = context(answers=dict(http(), **{"POST /get-quote": {"status": 500, "body": "Failed to get quote"}}))
    with raises(ctx.RpcError) as err:
        service.PlaceOrder(ctx, order_request())
    assert err.value.message == "shipping quote failure: failed POST to email service: expected 200, got 500"


def test_quote_without_cost():
    ctx = context(answers=dict(http(), **{"POST /get-quote": {"status": 200, "body": {}}}))
    with raises(ctx.RpcError) as err:
        service.PlaceOrder(ctx, order_request())
    assert err.value.message == "shipping quote failure: shipping quote missing cost_usd field"


def test_charge_failure_text():
    declined = TestRpcError("UNKNOWN", "Credit card info is invalid.")
    ctx = context(responses=backends(Charge=declined))
    with raises(ctx.RpcError) as err:
        service.PlaceOrder(ctx, order_request())
    assert err.value.code == "INTERNAL"
    assert err.value.message == ("failed to charge card: could not charge the card: "
                                 "rpc error: code = Unknown desc = Credit card info is invalid.")


def test_payment_unreachable_flag_dials_bad_address():
    ctx = context(flags={"paymentUnreachable": True})
    service.PlaceOrder(ctx, order_request())
    assert [c["addr"] for c in ctx.calls if c["method"] == "Charge"] == ["badAddress:50051"]


def test_ship_order_failure_is_unavailable():
    ctx = context(answers=dict(http(), **{"POST /ship-order": {"status": 503, "body": "no healthy upstream"}}))
    with raises(ctx.RpcError) as err:
        service.PlaceOrder(ctx, order_request())
    assert err.value.code == "UNAVAILABLE"
    assert err.value.message == "shipping error: failed POST to email service: expected 200, got 503"


def test_email_failure_is_a_warning_and_the_order_succeeds():
    down = TestHttpError("refused", 'Post "http://email:8080/send_order_confirmation": dial tcp '
                                    "10.96.0.4:8080: connect: connection refused")
    ctx = context(answers=dict(http(), **{"POST /send_order_confirmation": down}))
    assert service.PlaceOrder(ctx, order_request())["order"]["order_id"]
    assert ctx.logged("warning") == ['failed to send order confirmation to "larry_sergei@example.com": '
                                     'failed POST to email service: Post "http://email:8080/send_order_confirmation": '
                                     "dial tcp 10.96.0.4:8080: connect: connection refused"]
    ctx = context(answers=dict(http(), **{"POST /send_order_confirmation": {"status": 500, "body": ""}}))
    service.PlaceOrder(ctx, order_request())
    assert ctx.logged("warning")[0].endswith("failed POST to email service: expected 200, got 500")


def test_kafka_failure_is_logged_and_the_order_succeeds():
    text = "kafka: client has run out of available brokers to talk to: dial tcp 10.96.0.3:9092: connect: connection refused"
    ctx = context(kafka_error=("UNAVAILABLE", text))
    service.PlaceOrder(ctx, order_request())
    assert ctx.logged("error") == [f"Failed to write message: {text}"]


def test_no_kafka_addr_no_publish():
    ctx = TestContext(env=dict(ENV, KAFKA_ADDR=""), responses=backends(), http=http())
    service.PlaceOrder(ctx, order_request())
    assert ctx.sent == [] and "sending to postProcessor" not in ctx.logged("info")


def test_kafka_queue_problems_resends_the_order():
    ctx = context(flags={"kafkaQueueProblems": 3})
    service.PlaceOrder(ctx, order_request())
    assert len(ctx.sent) == 4
    assert "Done with #3 messages for overload simulation." in ctx.logged("info")


def test_mismatching_currency_panics():
    ctx = context(responses=backends(Convert=lambda r: dict(r["from"])))
    with raises(money.MoneyError) as err:
        service.PlaceOrder(ctx, order_request("EUR"))
    assert str(err.value) == "mismatching currency codes"


def test_must_map_env_panics():
    with raises(Exception) as err:
        service.init(TestContext(env=dict(ENV, EMAIL_ADDR="")))
    assert str(err.value) == 'environment variable "EMAIL_ADDR" not set'
    service.init(TestContext(env=dict(ENV, KAFKA_ADDR="")))
