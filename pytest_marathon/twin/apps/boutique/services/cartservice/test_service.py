from testing import TestContext, raises

import service

ENV = {"REDIS_ADDR": "redis-cart:6379"}


def test_added_items_are_merged_per_product():
    ctx = TestContext(env=ENV)
    service.AddItem(ctx, {"user_id": "u1", "item": {"product_id": "OLJCESPC7Z", "quantity": 2}})
    service.AddItem(ctx, {"user_id": "u1", "item": {"product_id": "OLJCESPC7Z", "quantity": 3}})
    cart = service.GetCart(ctx, {"user_id": "u1"})
    assert cart["items"] == [{"product_id": "OLJCESPC7Z", "quantity": 5}]


def test_unknown_user_has_an_empty_cart():
    cart = service.GetCart(TestContext(env=ENV), {"user_id": "nobody"})
    assert cart == {"user_id": "nobody", "items": []}


def test_empty_cart_removes_items():
    ctx = TestContext(env=ENV)
    service.AddItem(ctx, {"user_id": "u1", "item": {"product_id": "6E92ZMYYFZ", "quantity": 1}})
    service.EmptyCart(ctx, {"user_id": "u1"})
    assert service.GetCart(ctx, {"user_id": "u1"})["items"] == []


def test_zero_quantity_is_rejected():
    ctx = TestContext(env=ENV)
    with raises(ctx.RpcError) as err:
        service.AddItem(ctx, {"user_id": "u1", "item": {"product_id": "6E92ZMYYFZ", "quantity": 0}})
    assert err.value.code == "INVALID_ARGUMENT"


def test_redis_down_is_a_failed_precondition():
    ctx = TestContext(env=ENV, datastore_error=("UNAVAILABLE", "It was not possible to connect to the redis server(s)."))
    with raises(ctx.RpcError) as err:
        service.GetCart(ctx, {"user_id": "u1"})
    assert err.value.code == "FAILED_PRECONDITION"
    assert ctx.logged("error")[0].startswith("Can't access cart storage.")
