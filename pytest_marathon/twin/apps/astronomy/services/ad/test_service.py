"""Pinned against open-telemetry/opentelemetry-demo 2.2.0
src/ad/src/main/java/oteldemo/AdService.java."""

from testing import TestContext, raises

import service

ENV = {"AD_PORT": "8080"}


def texts(response):
    return [one["text"] for one in response["ads"]]


def test_targeted_ads_for_a_category():
    ctx = TestContext(env=ENV)
    response = service.GetAds(ctx, {"context_keys": ["accessories"]})
    assert [one["redirect_url"] for one in response["ads"]] == [
        "/product/0PUK6V6EV0", "/product/6E92ZMYYFZ", "/product/L9ECAV7KIM"]
    assert ctx.logged("info") == ["Targeted ad request received for [accessories]"]


def test_books_have_no_ads_so_two_random_ones_are_served():
    ctx = TestContext(env=ENV)
    response = service.GetAds(ctx, {"context_keys": ["books"]})
    assert len(response["ads"]) == 2
    assert all(one in service.ALL_ADS for one in response["ads"])


def test_no_keys_is_a_random_response():
    ctx = TestContext(env=ENV, request_id="r-7")
    response = service.GetAds(ctx, {"context_keys": []})
    assert len(response["ads"]) == 2
    assert response == service.GetAds(TestContext(env=ENV, request_id="r-7"), {})
    assert ctx.logged("info") == ["Non-targeted ad request received, preparing random response."]


def test_several_keys_concatenate():
    ctx = TestContext(env=ENV)
    response = service.GetAds(ctx, {"context_keys": ["binoculars", "travel"]})
    assert texts(response) == ["Roof Binoculars for sale. 50% off.",
                               "Eclipsmart Travel Refractor Telescope for sale. "
                               "Buy one, get second kit for free"]
    assert ctx.logged("info") == ["Targeted ad request received for [binoculars, travel]"]


def test_ad_failure_flag_fails_one_call_in_ten_with_an_empty_unavailable():
    failed = 0
    for i in range(200):
        ctx = TestContext(env=ENV, flags={"adFailure": True}, request_id=f"req-{i}")
        try:
            service.GetAds(ctx, {"context_keys": ["telescopes"]})
        except ctx.RpcError as err:
            failed += 1
            assert (err.code, err.message) == ("UNAVAILABLE", "")
            assert ctx.logged("warning") == [
                "GetAds Failed with status Status{code=UNAVAILABLE, description=null, cause=null}"]
    assert 5 <= failed <= 40


def test_manual_gc_flag_costs_time():
    ctx = TestContext(env=ENV, flags={"adManualGc": True})
    service.GetAds(ctx, {"context_keys": ["telescopes"]})
    assert ctx.slept_ms >= 400
    assert ctx.logged("warning") == ["Feature Flag adManualGc enabled, performing a manual gc now"]


def test_start_needs_ad_port():
    ctx = TestContext(env={})
    with raises(ctx.Exit):
        service.init(ctx)
    assert ctx.logged("error") == ['Exception in thread "main" java.lang.IllegalStateException: '
                                   "environment vars: AD_PORT must not be null"]
