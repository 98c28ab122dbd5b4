"""Pinned against GoogleCloudPlatform/microservices-demo v0.10.6
src/cartservice/src/cartstore/RedisCartStore.cs."""

from testing import TestContext, raises

import linq
import service

ENV = {"REDIS_ADDR": "redis-cart:6379"}


def test_added_items_are_merged_per_product():
    ctx = TestContext(env=ENV)
    service.AddItem(ctx, {"user_id": "u1", "item": {"product_id": "OLJCESPC7Z", "quantity": 2}})
    service.AddItem(ctx, {"user_id": "u1", "item": {"product_id": "OLJCESPC7Z", "quantity": 3}})
    cart = service.GetCart(ctx, {"user_id": "u1"})
    assert cart["items"] == [{"product_id": "OLJCESPC7Z", "quantity": 5}]
    assert cart["user_id"] == "u1"


def test_unknown_user_has_a_new_empty_cart():
    cart = service.GetCart(TestContext(env=ENV), {"user_id": "nobody"})
    assert cart == {"user_id": "", "items": []}


def test_empty_cart_removes_items():
    ctx = TestContext(env=ENV)
    service.AddItem(ctx, {"user_id": "u1", "item": {"product_id": "6E92ZMYYFZ", "quantity": 1}})
    service.EmptyCart(ctx, {"user_id": "u1"})
    assert service.GetCart(ctx, {"user_id": "u1"})["items"] == []


def test_the_store_adds_any_quantity_without_checks():
    """AddItemAsync validates nothing: no cap, no user or product check."""
    ctx = TestContext(env=ENV)
    service.AddItem(ctx, {"user_id": "u1", "item": {"product_id": "6E92ZMYYFZ", "quantity": 5000}})
    service.AddItem(ctx, {"user_id": "", "item": {"product_id": "", "quantity": 0}})
    assert service.GetCart(ctx, {"user_id": "u1"})["items"][0]["quantity"] == 5000


def test_redis_down_is_a_failed_precondition_naming_the_exception():
    ctx = TestContext(env=ENV, datastore_error=(
        "UNAVAILABLE", "It was not possible to connect to the redis server(s)."))
    with raises(ctx.RpcError) as err:
        service.GetCart(ctx, {"user_id": "u1"})
    assert err.value.code == "FAILED_PRECONDITION"
    assert err.value.message == ("Can't access cart storage. StackExchange.Redis."
                                 "RedisConnectionException: It was not possible to connect to "
                                 "the redis server(s).")
    assert ctx.logged("error") == []


def test_line_lookup_has_single_or_default_semantics():
    """AddItemAsync's SingleOrDefault: null when absent, a throw when the line is there twice."""
    lines = [{"product_id": "P", "quantity": 1}, {"product_id": "P", "quantity": 1}]
    assert linq.single_or_default(lines, "Q") is None
    with raises(linq.InvalidOperation) as err:
        linq.single_or_default(lines, "P")
    assert err.value.text() == ("System.InvalidOperationException: "
                                "Sequence contains more than one matching element")
