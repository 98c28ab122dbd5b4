from testing import TestContext

import service


def test_supported_currencies_include_the_shop_currencies():
    codes = service.GetSupportedCurrencies(TestContext(), {})["currency_codes"]
    for code in ["USD", "EUR", "CAD", "JPY", "GBP", "TRY"]:
        assert code in codes


def test_convert_usd_to_eur():
    money = {"currency_code": "USD", "units": 11, "nanos": 305000000}
    result = service.Convert(TestContext(), {"from": money, "to_code": "EUR"})
    assert result["currency_code"] == "EUR"
    assert result["units"] == 10
    assert result["nanos"] < 1000


def test_convert_to_same_currency_keeps_amount():
    money = {"currency_code": "EUR", "units": 5, "nanos": 250000000}
    result = service.Convert(TestContext(), {"from": money, "to_code": "EUR"})
    assert (result["units"], result["nanos"]) == (5, 250000000)


def test_unknown_currency_converts_to_zero_not_an_error():
    """server.js convert: an unknown code yields NaN, sent as 0 by protobuf.js."""
    ctx = TestContext()
    money = {"currency_code": "XXX", "units": 1, "nanos": 0}
    assert service.Convert(ctx, {"from": money, "to_code": "EUR"}) == {
        "currency_code": "EUR", "units": 0, "nanos": 0}
    money = {"currency_code": "USD", "units": 3, "nanos": 0}
    assert service.Convert(ctx, {"from": money, "to_code": "ABC"}) == {
        "currency_code": "ABC", "units": 0, "nanos": 0}
    assert ctx.logged("info") == ["conversion request successful"] * 2
