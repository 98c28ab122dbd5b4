"""currency: conversion through EUR rates (C++, gRPC C++ server).

Upstream: open-telemetry/opentelemetry-demo 2.2.0 src/currency/src/server.cpp (the rate table,
GetSupportedCurrencies, getDouble, getUnitsAndNanos, Convert, main). Known 2.2.0 behaviour kept:
an unknown code is not an error: `currency_conversion[code]` inserts 0.0 (so the code is listed by
GetSupportedCurrencies afterwards), a 0.0 `from` rate divides to inf/nan and the `(long)` cast
gives LONG_MIN units; getDouble reads the nanos' digits without their leading zeros (0.05 -> 0.5).
The catch(...) path (CANCELLED, `Convert conversion failure`) is unreachable in practice.
"""

import math

LONG_MIN = -9223372036854775808

# server.cpp currency_conversion (EUR based); a std::unordered_map, so iteration order is the
# map's, not this one
CURRENCY_CONVERSION = {
    "EUR": 1.0, "USD": 1.1305, "JPY": 126.40, "BGN": 1.9558, "CZK": 25.592, "DKK": 7.4609,
    "GBP": 0.85970, "HUF": 315.51, "PLN": 4.2996, "RON": 4.7463, "SEK": 10.5375, "CHF": 1.1360,
    "ISK": 136.80, "NOK": 9.8040, "HRK": 7.4210, "RUB": 74.4208, "TRY": 6.1247, "AUD": 1.6072,
    "BRL": 4.2682, "CAD": 1.5128, "CNY": 7.5857, "HKD": 8.8743, "IDR": 15999.40, "ILS": 4.0875,
    "INR": 79.4320, "KRW": 1275.05, "MXN": 21.7999, "MYR": 4.6289, "NZD": 1.6679, "PHP": 59.083,
    "SGD": 1.5349, "THB": 36.012, "ZAR": 16.0583,
}


class CppException(Exception):
    """A C++ exception (`what()` text) thrown by the conversion."""

    def __init__(self, kind, what):
        self.kind = kind
        self.what = what


def terminate(ctx, kind, what):
    """An exception no handler catches: libstdc++'s verbose terminate handler, then abort()."""
    ctx.log("error", f"terminate called after throwing an instance of '{kind}'\n  what():  {what}")
    raise ctx.Exit(134)


def rate_of(code):
    """`currency_conversion[code]`: operator[] inserts a zero for an unknown key."""
    if code not in CURRENCY_CONVERSION:
        CURRENCY_CONVERSION[code] = 0.0
    return CURRENCY_CONVERSION[code]


def get_double(money):
    """getDouble: the nanos' decimal digits, least significant first, each shifting right."""
    nanos = money.get("nanos", 0)
    decimal = 0.0
    while nanos != 0:
        digit = abs(nanos) % 10 if nanos > 0 else -(abs(nanos) % 10)  # C++ % truncates
        nanos = int(nanos / 10)
        decimal = decimal / 10 + digit / 10
    return float(money.get("units", 0)) + decimal


def units_and_nanos(value):
    """getUnitsAndNanos: `(long)value`, then `(long)(rem * 1e9)` stored in an int32."""
    if math.isinf(value) or math.isnan(value):
        return LONG_MIN, 0
    unit = int(value)
    nano = int((value - unit) * 1000000000)
    return unit, nano


def divide(value, rate):
    if rate == 0.0:
        if value == 0.0:
            return math.nan
        return math.inf if value > 0 else -math.inf
    return value / rate


def GetSupportedCurrencies(ctx, request):
    codes = list(CURRENCY_CONVERSION.keys())
    ctx.log("info", "GetSupportedCurrencies successful")
    return {"currency_codes": codes}


def Convert(ctx, request):
    source = request.get("from", {})
    try:
        one_euro = divide(get_double(source), rate_of(source.get("currency_code", "")))
        to_code = request.get("to_code", "")
        final = one_euro * rate_of(to_code)
        units, nanos = units_and_nanos(final)
        response = {"currency_code": to_code, "units": units, "nanos": nanos}
    except CppException:
        # catch(...): span status error, `Convert conversion failure`, Status::CANCELLED
        ctx.log("error", "Convert conversion failure")
        ctx.fail("CANCELLED", "")
    ctx.log("info", "Convert conversion successful")
    return response


def init(ctx):
    """main(): no port argument prints the usage and exits 0; the static `std::string version =
    std::getenv("VERSION")` throws before main when VERSION is unset (fixed after 2.2.0)."""
    if ctx.env("VERSION") is None:
        terminate(ctx, "std::logic_error", "basic_string: construction from null is not valid")
    if not ctx.env("CURRENCY_PORT", ""):
        ctx.log("info", "Usage: currency <port>")
        raise ctx.Exit(0)
