"""Pinned against open-telemetry/opentelemetry-demo 2.2.0 src/currency/src/server.cpp."""

from testing import TestContext, raises

import service


def test_usd_to_eur():
    ctx = TestContext()
    out = service.Convert(ctx, {"from": {"currency_code": "USD", "units": 113, "nanos": 50000000}, "to_code": "EUR"})
    # getDouble reads nanos 050000000 as .5: 113.5 / 1.1305
    assert out["currency_code"] == "EUR" and out["units"] == 100 and 398000000 < out["nanos"] < 399000000
    assert ctx.logged("info") == ["Convert conversion successful"]


def test_usd_to_usd_round_trip_truncates():
    out = service.Convert(TestContext(), {"from": {"currency_code": "USD", "units": 349, "nanos": 950000000},
                                          "to_code": "USD"})
    assert out["units"] == 349 and 949999000 < out["nanos"] <= 950000000


def test_unknown_to_code_is_zero_and_becomes_supported():
    ctx = TestContext()
    out = service.Convert(ctx, {"from": {"currency_code": "USD", "units": 10}, "to_code": "XYZ"})
    assert out == {"currency_code": "XYZ", "units": 0, "nanos": 0}
    assert "XYZ" in service.GetSupportedCurrencies(ctx, {})["currency_codes"]


def test_unknown_from_code_divides_by_zero():
    out = service.Convert(TestContext(), {"from": {"currency_code": "", "units": 10}, "to_code": "EUR"})
    assert out["units"] == -9223372036854775808 and out["nanos"] == 0


def test_supported_currencies():
    ctx = TestContext()
    assert len(service.GetSupportedCurrencies(ctx, {})["currency_codes"]) == 33
    assert ctx.logged("info") == ["GetSupportedCurrencies successful"]


def test_version_unset_aborts():
    with raises(TestContext.Exit) as err:
        service.init(TestContext(env={"CURRENCY_PORT": "8080"}))
    assert err.value.code == 134
    service.init(TestContext(env={"CURRENCY_PORT": "8080", "VERSION": "2.2.0"}))
