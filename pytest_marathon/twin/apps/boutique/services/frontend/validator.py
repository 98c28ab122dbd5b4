"""Form validation as the Go frontend does it with go-playground/validator (v10).

Upstream: GoogleCloudPlatform/microservices-demo v0.10.6 src/frontend/validator/validator.go
(the payload structs and their `validate:` tags, `ValidationErrorResponse`) and
go-playground/validator baked_in.go (`isCreditCard`, `digitsHaveLuhnChecksum`, `isIso4217`).
Each check returns the error text the frontend renders with HTTP 422: one
"Field '<StructField>' is invalid: <tag>" line per failing field, in struct order, naming the
first tag that failed; "" when the payload is valid.
"""

import re

# go-playground's email regex is far larger; this keeps its shape: local part, "@", a dotted host.
EMAIL = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                   r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$")
# validator currency_codes.go (the iso4217 tag)
ISO4217 = frozenset((
    "AFN EUR ALL DZD USD AOA XCD ARS AMD AWG AUD AZN BSD BHD BDT BBD BYN BZD XOF BMD INR BTN BOB "
    "BOV BAM BWP NOK BRL BND BGN BIF CVE KHR XAF CAD KYD CLP CLF CNY COP COU KMF CDF NZD CRC CUP "
    "CZK DKK DJF DOP EGP SVC ERN SZL ETB FKP FJD XPF GMD GEL GHS GIP GTQ GBP GNF GYD HTG HNL HKD "
    "HUF ISK IDR XDR IRR IQD ILS JMD JPY JOD KZT KES KPW KRW KWD KGS LAK LBP LSL ZAR LRD LYD CHF "
    "MOP MKD MGA MWK MYR MVR MRU MUR XUA MXN MXV MDL MNT MAD MZN MMK NAD NPR NIO NGN OMR PKR PAB "
    "PGK PYG PEN PHP PLN QAR RON RUB RWF SHP WST STN SAR RSD SCR SLE SGD XSU SBD SOS SSP LKR SDG "
    "SRD SEK CHE CHW SYP TWD TJS TZS THB TOP TTD TND TRY TMT UGX UAH AED USN UYU UYI UYW UZS VUV "
    "VES VED VND YER ZMW ZWG XBA XBB XBC XBD XCG XTS XXX XAU XPD XPT XAG").split())


def parse_uint(text):
    """strconv.ParseUint(s, 10, 32) with the error ignored: 0 unless all digits, the largest
    uint32 when out of range."""
    text = str(text)
    return min(int(text), 4294967295) if text.isdigit() else 0


def parse_int(text):
    """strconv.ParseInt(s, 10, 32) with the error ignored: 0 unless an optionally signed number,
    clamped to int32 when out of range."""
    text = str(text)
    digits = text[1:] if text[:1] in ("-", "+") else text
    if not digits.isdigit():
        return 0
    value = int(digits) * (-1 if text[:1] == "-" else 1)
    return max(-2147483648, min(value, 2147483647))


def luhn(digits):
    """digitsHaveLuhnChecksum: any non-digit fails."""
    if not digits.isdigit():
        return False
    size = len(digits)
    total = 0
    for index, char in enumerate(digits):
        value = int(char)
        if (size % 2 == 0 and index % 2 == 0) or (size % 2 == 1 and index % 2 == 1):
            value = value * 2
            total = total + (1 + value % 10 if value >= 10 else value)
        else:
            total = total + value
    return total % 10 == 0


def is_credit_card(value):
    """isCreditCard: space-separated groups of at least 3, 12-19 characters, Luhn."""
    joined = ""
    for segment in value.split(" "):
        if len(segment) < 3:
            return False
        joined = joined + segment
    return 12 <= len(joined) <= 19 and luhn(joined)


def first_failure(value, rules):
    """The first tag of `rules` (name, passes) that `value` fails, or ""."""
    for tag, passes in rules:
        if not passes(value):
            return tag
    return ""


def report(fields):
    """ValidationErrorResponse over (struct field, value, rules)."""
    text = ""
    for name, value, rules in fields:
        tag = first_failure(value, rules)
        if tag:
            text = text + f"Field '{name}' is invalid: {tag}\n"
    return text


def required(value):
    return value != "" and value != 0


def size_of(value):
    """What go-playground's size tags (len, min, max) measure: a string's length, but a
    number's own value."""
    return len(value) if isinstance(value, str) else value


def at_most(limit):
    """The `max=` tag."""
    return lambda value: size_of(value) <= limit


def exactly(size):
    """The `len=` tag."""
    return lambda value: size_of(value) == size


def add_to_cart(quantity, product_id):
    return report([
        ("Quantity", quantity, [("required", required), ("gte", lambda v: v >= 1),
                                ("lte", lambda v: v <= 10)]),
        ("ProductID", product_id, [("required", required)]),
    ])


def place_order(form):
    text_rules = [("required", required), ("max", at_most(128))]
    return report([
        ("Email", form["email"], [("required", required), ("email", EMAIL.match)]),
        ("StreetAddress", form["street_address"], [("required", required), ("max", at_most(512))]),
        ("ZipCode", form["zip_code"], [("required", required)]),
        ("City", form["city"], text_rules),
        ("State", form["state"], text_rules),
        ("Country", form["country"], text_rules),
        ("CcNumber", form["credit_card_number"], [("required", required),
                                                  ("credit_card", is_credit_card)]),
        ("CcMonth", form["credit_card_expiration_month"],
         [("required", required), ("gte", lambda v: v >= 1), ("lte", lambda v: v <= 12)]),
        ("CcYear", form["credit_card_expiration_year"], [("required", required)]),
        ("CcCVV", form["credit_card_cvv"], [("required", required)]),
    ])


def set_currency(currency):
    return report([("Currency", currency, [("required", required),
                                           ("iso4217", lambda v: v in ISO4217)])])
