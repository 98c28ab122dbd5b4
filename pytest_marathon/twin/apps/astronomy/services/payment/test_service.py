"""Pinned against open-telemetry/opentelemetry-demo 2.2.0 src/payment/charge.js and index.js."""

from testing import TestContext, raises

import service

AMOUNT = {"currency_code": "USD", "units": 26, "nanos": 970000000}


def card(number="4432-8015-6152-0454", month=1, year=2039):
    return {"credit_card_number": number, "credit_card_expiration_month": month,
            "credit_card_expiration_year": year, "credit_card_cvv": 672}


def test_charge_accepts_dashed_visa():
    ctx = TestContext()
    reply = service.Charge(ctx, {"amount": AMOUNT, "credit_card": card()})
    assert len(reply["transaction_id"]) == 36
    assert '"msg":"Transaction complete."' in ctx.logged("info")[1]


def test_invalid_card_is_unknown_with_the_message():
    ctx = TestContext()
    with raises(ctx.RpcError) as err:
        service.Charge(ctx, {"amount": AMOUNT, "credit_card": card("4432-8015-6152-0455")})
    assert err.value.code == "UNKNOWN" and err.value.message == "Credit card info is invalid."
    assert "Credit card info is invalid." in ctx.logged("warning")[0]


def test_amex_refused():
    ctx = TestContext()
    with raises(ctx.RpcError) as err:
        service.Charge(ctx, {"amount": AMOUNT, "credit_card": card("378282246310005")})
    assert err.value.message == "Sorry, we cannot process amex credit cards. Only VISA or MasterCard is accepted."


def test_expired():
    ctx = TestContext()
    with raises(ctx.RpcError) as err:
        service.Charge(ctx, {"amount": AMOUNT, "credit_card": card(year=2024)})
    assert err.value.message == "The credit card (ending 0454) expired on 1/2024."


def test_payment_failure_flag():
    ctx = TestContext(flags={"paymentFailure": 1})
    with raises(ctx.RpcError) as err:
        service.Charge(ctx, {"amount": AMOUNT, "credit_card": card()})
    assert err.value.message == "Payment request failed. Invalid token. app.loyalty.level=gold"


def test_absent_card_is_a_destructuring_type_error():
    ctx = TestContext()
    with raises(ctx.RpcError) as err:
        service.Charge(ctx, {"amount": AMOUNT})
    assert err.value.message == ("Cannot destructure property 'creditCardNumber' of 'request.creditCard' "
                                 "as it is undefined.")
    assert '"type":"TypeError"' in ctx.logged("warning")[0]
