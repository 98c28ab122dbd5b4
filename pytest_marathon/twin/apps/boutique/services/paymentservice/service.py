"""paymentservice: validates the card and "charges" it (Node.js original with card-validator).

Upstream: GoogleCloudPlatform/microservices-demo v0.10.6 src/paymentservice/server.js
(ChargeServiceHandler logs every request, then `console.warn(err)` on a refused card and passes
the error to the callback) and charge.js (the checks, their messages and the CreditCardError
classes, whose `code = 400` grpc-js sends as the status: a Go caller sees `Code(400)`).
"""

import hashlib
import json

# The twin's calendar: virtual time 0 is the first of June 2025.
EPOCH_YEAR = 2025
EPOCH_MONTH = 6
SECONDS_PER_MONTH = 30 * 24 * 3600


class CreditCardError(Exception):
    """charge.js CreditCardError: `kind` is the subclass thrown (InvalidCreditCard, ...), `code`
    the status grpc-js sends for it (serverErrorToStatus takes any integer code as is)."""

    code = 400  # Invalid argument error

    def __init__(self, kind, message):
        self.kind = kind
        self.message = message


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
    prefix = int(number[:4]) if len(number) >= 4 else 0
    if 51 <= prefix // 100 <= 55 or 2221 <= prefix <= 2720:
        return "mastercard"
    if number[:2] in ("34", "37"):
        return "amex"
    return "unknown"


def current_year_month(now):
    months = EPOCH_MONTH - 1 + int(now // SECONDS_PER_MONTH)
    return EPOCH_YEAR + months // 12, months % 12 + 1


def Charge(ctx, request):
    ctx.work(2.0)
    ctx.log("info", f"PaymentService#Charge invoked with request "
                    f"{json.dumps(request, separators=(',', ':'))}")
    try:
        return charge(ctx, request, request.get("credit_card", {}))
    except CreditCardError as err:
        # console.warn(err): Node's inspect names a subclass that keeps Error's name this way
        ctx.log("warning", f"{err.kind} [Error]: {err.message}")
        ctx.fail(err.code, err.message)
    except ctx.RpcError as err:
        ctx.log("warning", f"Error: {err.message}")  # console.warn(err): the error's stack
        raise


def charge(ctx, request, card):
    """charge.js: validate the card, then "charge" it."""
    amount = request.get("amount", {})
    number = digits_of(card.get("credit_card_number", ""))
    if not luhn_valid(number):
        raise CreditCardError("InvalidCreditCard", "Credit card info is invalid")
    kind = card_type(number)
    if kind not in ("visa", "mastercard"):
        raise CreditCardError("UnacceptedCreditCard",
                              f"Sorry, we cannot process {kind} credit cards. "
                              "Only VISA or MasterCard is accepted.")
    year, month = current_year_month(ctx.now)
    exp_year = card.get("credit_card_expiration_year", 0)
    exp_month = card.get("credit_card_expiration_month", 0)
    if (year * 12 + month) > (exp_year * 12 + exp_month):
        raise CreditCardError("ExpiredCreditCard",
                              f"Your credit card (ending {number[-4:]}) expired on {exp_month}/{exp_year}")
    ctx.log("info", f"Transaction processed: {kind} ending {number[-4:]} "
                    f"Amount: {amount.get('currency_code', '')}{amount.get('units', 0)}."
                    f"{amount.get('nanos', 0)}")
    seed = f"{ctx.request_id}:{number}:{amount.get('units', 0)}:{amount.get('nanos', 0)}"
    digest = hashlib.sha256(seed.encode()).hexdigest()
    transaction_id = f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-a{digest[17:20]}-{digest[20:32]}"
    return {"transaction_id": transaction_id}
