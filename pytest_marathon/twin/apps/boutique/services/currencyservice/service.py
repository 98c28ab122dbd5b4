"""currencyservice: money conversion through EUR with units/nanos carry (Node.js original)."""

import json

NANOS_PER_UNIT = 1000000000
RATES = {code: float(rate) for code, rate in json.loads(resource("currency_conversion.json")).items()}


def carry(units, nanos):
    """Move fractional units into nanos and whole nanos into units (the Node `_carry`)."""
    nanos = nanos + (units % 1) * NANOS_PER_UNIT
    units = int(units // 1) + int(nanos // NANOS_PER_UNIT)
    nanos = nanos % NANOS_PER_UNIT
    return units, nanos


def rate_of(ctx, code):
    rate = RATES.get(code)
    if rate is None:
        ctx.fail("INVALID_ARGUMENT", f"Unsupported currency: {code}")
    return rate


def GetSupportedCurrencies(ctx, request):
    ctx.work(0.3)
    ctx.log("info", "Getting supported currencies...")
    return {"currency_codes": sorted(RATES)}


def Convert(ctx, request):
    ctx.work(0.5)
    source = request.get("from", {})
    to_code = request.get("to_code", "")
    from_rate = rate_of(ctx, source.get("currency_code", ""))
    to_rate = rate_of(ctx, to_code)
    # from_currency -> EUR
    euro_units, euro_nanos = carry(source.get("units", 0) / from_rate,
                                   source.get("nanos", 0) / from_rate)
    euro_nanos = round(euro_nanos)
    # EUR -> to_currency
    units, nanos = carry(euro_units * to_rate, euro_nanos * to_rate)
    ctx.log("info", "conversion request successful")
    return {"currency_code": to_code, "units": int(units // 1), "nanos": int(nanos // 1)}
