"""Pinned against GoogleCloudPlatform/microservices-demo v0.10.6 src/paymentservice (server.js,
charge.js): card errors carry code 400, which grpc-js sends as the status
(grpc/grpc-node packages/grpc-js/src/server-call.ts serverErrorToStatus)."""

from testing import TestContext, raises

import service

VISA = {"credit_card_number": "4432-8015-6152-0454", "credit_card_cvv": 672,
        "credit_card_expiration_year": 2039, "credit_card_expiration_month": 1}
AMOUNT = {"currency_code": "USD", "units": 12, "nanos": 340000000}


def test_valid_visa_is_charged():
    ctx = TestContext()
    response = service.Charge(ctx, {"amount": AMOUNT, "credit_card": VISA})
    assert len(response["transaction_id"]) == 36
    assert ctx.logged("info")[0].startswith("PaymentService#Charge invoked with request {")
    assert "Transaction processed: visa ending 0454" in ctx.logged("info")[-1]


def test_luhn_rejects_a_mistyped_number():
    ctx = TestContext()
    card = dict(VISA, credit_card_number="4432-8015-6152-0455")
    with raises(ctx.RpcError) as err:
        service.Charge(ctx, {"amount": AMOUNT, "credit_card": card})
    assert err.value.code == 400
    assert err.value.message == "Credit card info is invalid"
    assert ctx.logged("warning") == ["InvalidCreditCard [Error]: Credit card info is invalid"]


def test_amex_is_not_accepted():
    ctx = TestContext()
    card = dict(VISA, credit_card_number="378282246310005")
    with raises(ctx.RpcError) as err:
        service.Charge(ctx, {"amount": AMOUNT, "credit_card": card})
    assert err.value.code == 400
    assert err.value.message == "Sorry, we cannot process amex credit cards. Only VISA or MasterCard is accepted."


def test_expired_card_is_rejected():
    ctx = TestContext()
    card = dict(VISA, credit_card_expiration_year=2020)
    with raises(ctx.RpcError) as err:
        service.Charge(ctx, {"amount": AMOUNT, "credit_card": card})
    assert err.value.code == 400
    message = f"Your credit card (ending {VISA['credit_card_number'][-4:]}) expired on 1/2020"
    assert err.value.message == message
    assert ctx.logged("warning") == [f"ExpiredCreditCard [Error]: {message}"]
