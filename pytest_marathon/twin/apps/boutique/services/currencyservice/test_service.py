from testing import TestContext, raises

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


def test_unsupported_currency_is_rejected():
    ctx = TestContext()
    money = {"currency_code": "XXX", "units": 1, "nanos": 0}
    with raises(ctx.RpcError) as err:
        service.Convert(ctx, {"from": money, "to_code": "EUR"})
    assert err.value.code == "INVALID_ARGUMENT"
