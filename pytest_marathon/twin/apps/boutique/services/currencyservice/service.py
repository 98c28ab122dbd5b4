"""currencyservice: money conversion through EUR with units/nanos carry (Node.js original).

Upstream: GoogleCloudPlatform/microservices-demo v0.10.6 src/currencyservice/server.js
(`_carry`, `getSupportedCurrencies`, `convert`). A currency missing from the rate table is not
an error there: `data[code]` is undefined, the arithmetic gives NaN, and protobuf.js writes NaN
into the int64/int32 fields as 0 (`Long.fromValue(NaN)` and `NaN | 0`), so the caller receives a
zero amount in the requested currency.
"""

import json

NANOS_PER_UNIT = 1000000000
RATES = {code: float(rate) for code, rate in json.loads(resource("currency_conversion.json")).items()}


def carry(units, nanos):
    """Move fractional units into nanos and whole nanos into units (the Node `_carry`)."""
    nanos = nanos + (units % 1) * NANOS_PER_UNIT
    units = int(units // 1) + int(nanos // NANOS_PER_UNIT)
    nanos = nanos % NANOS_PER_UNIT
    return units, nanos


def rate_of(code):
    """`data[code]`: None stands for JavaScript's undefined."""
    return RATES.get(code)


def wire_int(value):
    """How protobuf.js encodes a JavaScript number into an integer field (NaN becomes 0)."""
    return 0 if value is None else int(value // 1)


def GetSupportedCurrencies(ctx, request):
    ctx.work(0.3)
    ctx.log("info", "Getting supported currencies...")
    return {"currency_codes": sorted(RATES)}


def Convert(ctx, request):
    ctx.work(0.5)
    source = request.get("from", {})
    to_code = request.get("to_code", "")
    from_rate = rate_of(source.get("currency_code", ""))
    to_rate = rate_of(to_code)
    if from_rate is None or to_rate is None:  # NaN all the way through
        ctx.log("info", "conversion request successful")
        return {"currency_code": to_code, "units": wire_int(None), "nanos": wire_int(None)}
    # from_currency -> EUR
    euro_units, euro_nanos = carry(source.get("units", 0) / from_rate,
                                   source.get("nanos", 0) / from_rate)
    euro_nanos = round(euro_nanos)
    # EUR -> to_currency
    units, nanos = carry(euro_units * to_rate, euro_nanos * to_rate)
    ctx.log("info", "conversion request successful")
    return {"currency_code": to_code, "units": wire_int(units), "nanos": wire_int(nanos)}
