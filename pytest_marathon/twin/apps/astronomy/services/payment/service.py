"""payment: card validation and the "charge" (Node.js 22, grpc-js server).

Upstream: open-telemetry/opentelemetry-demo 2.2.0 src/payment/index.js (chargeServiceHandler logs
`Charge request received.`, on a throw `logger.warn({ err })` and `callback(err)`) and charge.js
(the paymentFailure flag, simple-card-validator, the checks in order and their messages). A plain
Error passed to the callback is status UNKNOWN with the message as details (grpc-js).
"""

import hashlib
import json

# The twin's calendar: virtual time 0 is the first of June 2025 (as the boutique payment).
EPOCH_YEAR = 2025
EPOCH_MONTH = 6
SECONDS_PER_MONTH = 30 * 24 * 3600
LOYALTY_LEVEL = ("platinum", "gold", "silver", "bronze")


class ChargeError(Exception):
    """A JavaScript error thrown in charge(): its constructor name and message."""

    def __init__(self, message, kind="Error"):
        self.message = message
        self.kind = kind


def substr(value, start):
    """String.prototype.substr; on undefined a TypeError."""
    if value is None:
        raise ChargeError("Cannot read properties of undefined (reading 'substr')", "TypeError")
    return value[start:]


def digits_of(number):
    return "".join(ch for ch in number if ch not in " -")


def luhn_valid(number):
    if not number.isdigit() or not 12 <= len(number) <= 19:
        return False
    total = 0
    for position, ch in enumerate(reversed(number)):
        digit = int(ch)
        if position % 2 == 1:
            digit = digit * 2
            if digit > 9:
                digit = digit - 9
        total = total + digit
    return total % 10 == 0


def card_type(number):
    if number.startswith("4"):
        return "visa"
    prefix = int(number[:4]) if len(number) >= 4 and number[:4].isdigit() else 0
    if 51 <= prefix // 100 <= 55 or 2221 <= prefix <= 2720:
        return "mastercard"
    if number[:2] in ("34", "37"):
        return "amex"
    return "unknown"


def current_year_month(now):
    months = EPOCH_MONTH - 1 + int(now // SECONDS_PER_MONTH)
    return EPOCH_YEAR + months // 12, months % 12 + 1


def chance(ctx, salt):
    """Math.random(), derived from the request."""
    digest = hashlib.sha256(f"{salt}:{ctx.request_id}".encode()).hexdigest()
    return int(digest[:8], 16) / 4294967296


def charge(ctx, request):
    failure = ctx.flag("paymentFailure", 0)
    if failure > 0 and chance(ctx, "paymentFailure") < failure:
        raise ChargeError("Payment request failed. Invalid token. app.loyalty.level=gold")
    card = request.get("credit_card")
    if card is None:
        # `const {...} = request.creditCard` on an absent message field
        raise ChargeError("Cannot destructure property 'creditCardNumber' of 'request.creditCard' as it is "
                          "undefined.", "TypeError")
    number = card.get("credit_card_number", "")
    year = card.get("credit_card_expiration_year", 0)
    month = card.get("credit_card_expiration_month", 0)
    last_four = substr(number, -4)
    digits = digits_of(number or "")
    kind = card_type(digits)
    loyalty = LOYALTY_LEVEL[int(chance(ctx, "loyalty") * len(LOYALTY_LEVEL))]
    if not luhn_valid(digits):
        raise ChargeError("Credit card info is invalid.")
    if kind not in ("visa", "mastercard"):
        raise ChargeError(f"Sorry, we cannot process {kind} credit cards. Only VISA or MasterCard is accepted.")
    current_year, current_month = current_year_month(ctx.now)
    if current_year * 12 + current_month > year * 12 + month:
        raise ChargeError(f"The credit card (ending {last_four}) expired on {month}/{year}.")
    amount = request.get("amount", {})
    digest = hashlib.sha256(f"tx:{ctx.request_id}:{number}".encode()).hexdigest()
    transaction_id = f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-b{digest[17:20]}-{digest[20:32]}"
    ctx.log("info", json.dumps({"transactionId": transaction_id, "cardType": kind, "lastFourDigits": last_four,
                                "amount": {"units": amount.get("units", 0), "nanos": amount.get("nanos", 0),
                                           "currencyCode": amount.get("currency_code", "")},
                                "loyalty_level": loyalty, "msg": "Transaction complete."},
                               separators=(",", ":")))
    return {"transaction_id": transaction_id}


def Charge(ctx, request):
    ctx.log("info", json.dumps({"request": request, "msg": "Charge request received."}, separators=(",", ":")))
    try:
        return charge(ctx, request)
    except ChargeError as err:
        ctx.log("warning", json.dumps({"err": {"type": err.kind, "message": err.message,
                                               "stack": f"{err.kind}: {err.message}"}}, separators=(",", ":")))
        ctx.fail("UNKNOWN", err.message)
