"""Pinned against GoogleCloudPlatform/microservices-demo v0.10.6
src/productcatalogservice/product_catalog.go."""

from testing import TestContext, raises

import service


def test_list_products_returns_the_whole_catalog():
    response = service.ListProducts(TestContext(), {})
    ids = [product["id"] for product in response["products"]]
    assert len(ids) == 9
    assert "OLJCESPC7Z" in ids


def test_get_product_returns_price_in_usd():
    product = service.GetProduct(TestContext(), {"id": "66VCHSJNUP"})
    assert product["name"] == "Tank Top"
    assert product["price_usd"]["currency_code"] == "USD"


def test_get_unknown_product_is_not_found():
    ctx = TestContext()
    with raises(ctx.RpcError) as err:
        service.GetProduct(ctx, {"id": "NOPE"})
    assert err.value.code == "NOT_FOUND"


def test_search_is_case_insensitive():
    response = service.SearchProducts(TestContext(), {"query": "MUG"})
    assert [product["id"] for product in response["results"]] == ["6E92ZMYYFZ"]


def test_extra_latency_sleeps_without_cpu_work():
    """product_catalog.go: each handler starts with time.Sleep(extraLatency)."""
    ctx = TestContext(env={"EXTRA_LATENCY": "200ms"})
    service.GetProduct(ctx, {"id": "66VCHSJNUP"})
    assert ctx.slept_ms == 200
    assert ctx.work_ms < 5
