"""Money arithmetic on {currency_code, units, nanos}, a port of the Go `money` package."""

NANOS_MIN = -999999999
NANOS_MAX = 999999999
NANOS_MOD = 1000000000


class MoneyError(ValueError):
    pass


def signs_match(units, nanos):
    return units == 0 or nanos == 0 or (units > 0) == (nanos > 0)


def is_valid(money):
    nanos = money.get("nanos", 0)
    return signs_match(money.get("units", 0), nanos) and NANOS_MIN <= nanos <= NANOS_MAX


def truncated_divmod(value, divisor):
    """Go's integer division truncates toward zero and the remainder keeps the dividend's sign."""
    quotient = abs(value) // divisor
    if value < 0:
        quotient = -quotient
    return quotient, value - quotient * divisor


def add(left, right):
    if not is_valid(left) or not is_valid(right):
        raise MoneyError("one of the specified money values is invalid")
    if left.get("currency_code") != right.get("currency_code"):
        raise MoneyError("mismatching currency codes")
    units = left.get("units", 0) + right.get("units", 0)
    nanos = left.get("nanos", 0) + right.get("nanos", 0)
    if (units == 0 and nanos == 0) or (units > 0 and nanos >= 0) or (units < 0 and nanos <= 0):
        carry, nanos = truncated_divmod(nanos, NANOS_MOD)
        units = units + carry
    elif units > 0:
        units = units - 1
        nanos = nanos + NANOS_MOD
    else:
        units = units + 1
        nanos = nanos - NANOS_MOD
    return {"currency_code": left.get("currency_code"), "units": units, "nanos": nanos}


def multiply_slow(money, times):
    """Repeated addition, exactly like the Go helper (it returns `money` itself for 0 or 1)."""
    total = money
    while times > 1:
        total = add(total, money)
        times = times - 1
    return total


def zero(currency_code):
    return {"currency_code": currency_code, "units": 0, "nanos": 0}
