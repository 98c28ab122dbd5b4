"""Pinned against open-telemetry/opentelemetry-demo 2.2.0
src/recommendation/recommendation_server.py."""

from testing import TestContext, TestRpcError, raises

import rand
import service

ENV = {"OTEL_SERVICE_NAME": "recommendation", "PRODUCT_CATALOG_ADDR": "product-catalog:8080",
       "RECOMMENDATION_PORT": "8080"}
IDS = ["0PUK6V6EV0", "1YMWWN1N4O", "2ZYFJ3GM2N", "66VCHSJNUP", "6E92ZMYYFZ", "9SIQT8TOJO",
       "L9ECAV7KIM", "LS4PSXUNUM", "OLJCESPC7Z", "HQTGWGPNH4"]
CATALOG = {"ListProducts": {"products": [{"id": i, "name": i} for i in IDS]}}


def fresh():
    service.STATE["first_run"] = True
    service.STATE["cached_ids"] = []


def test_five_other_products_from_the_catalog():
    fresh()
    ctx = TestContext(env=ENV, responses=CATALOG)
    ids = service.ListRecommendations(ctx, {"user_id": "", "product_ids": ["66VCHSJNUP"]})["product_ids"]
    assert len(ids) == 5 and len(set(ids)) == 5
    assert "66VCHSJNUP" not in ids and set(ids) <= set(IDS)
    assert ctx.calls[0]["addr"] == "product-catalog:8080"
    assert ctx.calls[0]["method"] == "ListProducts"
    assert ctx.calls[0]["timeout_ms"] is None  # no deadline upstream
    assert ctx.logged("info") == [f"Receive ListRecommendations for product ids:{ids}"]


def test_same_request_same_answer_and_comma_joined_ids():
    fresh()
    first = service.ListRecommendations(TestContext(env=ENV, responses=CATALOG),
                                        {"product_ids": ["66VCHSJNUP,", "OLJCESPC7Z"]})
    second = service.ListRecommendations(TestContext(env=ENV, responses=CATALOG),
                                         {"product_ids": ["66VCHSJNUP,", "OLJCESPC7Z"]})
    assert first == second
    assert not {"66VCHSJNUP", "OLJCESPC7Z"} & set(first["product_ids"])


def test_small_catalog_returns_what_is_left():
    fresh()
    ctx = TestContext(env=ENV, responses={"ListProducts": {"products": [{"id": "A"}, {"id": "B"}]}})
    assert service.ListRecommendations(ctx, {"product_ids": ["A"]}) == {"product_ids": ["B"]}


def test_catalog_failure_escapes_the_servicer():
    fresh()
    ctx = TestContext(env=ENV, responses={"ListProducts": TestRpcError(
        "UNAVAILABLE", "failed to connect to all addresses")})
    with raises(TestRpcError) as err:
        service.ListRecommendations(ctx, {"product_ids": ["66VCHSJNUP"]})
    assert err.value.code == "UNAVAILABLE"


def test_cache_failure_flag_asks_get_product_with_an_empty_request():
    """The 2.2.0 bug: GetProduct(Empty) is NotFound 'Product Not Found: ' on the first call."""
    fresh()
    ctx = TestContext(env=ENV, flags={"recommendationCacheFailure": True}, responses={
        "GetProduct": TestRpcError("NOT_FOUND", "Product Not Found: ")})
    with raises(TestRpcError) as err:
        service.ListRecommendations(ctx, {"product_ids": ["66VCHSJNUP"]})
    assert err.value.message == "Product Not Found: "
    assert ctx.calls[0]["request"] == {}
    assert ctx.logged("info") == ["get_product_list: cache miss"]


def test_start_requires_the_environment():
    fresh()
    ctx = TestContext(env={"OTEL_SERVICE_NAME": "recommendation"})
    with raises(Exception) as err:
        service.init(ctx)
    assert str(err.value) == "PRODUCT_CATALOG_ADDR environment variable must be set"
    ok = TestContext(env=ENV)
    service.init(ok)
    assert ok.logged("info") == ["Recommendation service started, listening on port 8080"]


def test_sample_has_cpython_checks():
    rng = rand.Random("seed")
    with raises(TypeError) as err:
        rng.sample({"a", "b"}, 1)
    assert str(err.value) == "Population must be a sequence.  For dicts or sets, use sorted(d)."
    with raises(ValueError) as err:
        rng.sample([1], 2)
    assert str(err.value) == "Sample larger than population or is negative"
    assert sorted(rng.sample(range(4), 4)) == [0, 1, 2, 3]
    assert 0.0 <= rng.random() < 1.0
