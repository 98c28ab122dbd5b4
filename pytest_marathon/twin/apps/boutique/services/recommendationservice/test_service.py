from testing import TestContext, raises

import service

CATALOG = {"products": [{"id": f"P{n}"} for n in range(8)]}
ENV = {"PRODUCT_CATALOG_SERVICE_ADDR": "productcatalogservice:3550"}


def test_returns_five_products_not_in_the_request():
    ctx = TestContext(env=ENV, responses={"ListProducts": CATALOG})
    response = service.ListRecommendations(ctx, {"user_id": "u1", "product_ids": ["P1", "P2"]})
    assert len(response["product_ids"]) == 5
    assert "P1" not in response["product_ids"]
    assert ctx.calls[0]["addr"] == "productcatalogservice:3550"


def test_small_catalog_returns_what_is_left():
    ctx = TestContext(env=ENV, responses={"ListProducts": {"products": [{"id": "P1"}, {"id": "P2"}]}})
    response = service.ListRecommendations(ctx, {"user_id": "u1", "product_ids": ["P1"]})
    assert response["product_ids"] == ["P2"]


def test_catalog_failure_propagates():
    ctx = TestContext(env=ENV)
    with raises(ctx.RpcError):
        service.ListRecommendations(ctx, {"user_id": "u1", "product_ids": []})
