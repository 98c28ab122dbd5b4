"""Pinned against open-telemetry/opentelemetry-demo 2.2.0 src/cart/src/cartstore/ValkeyCartStore.cs,
services/CartService.cs and Program.cs."""

from testing import TestContext, raises

import dotnet
import service

ENV = {"VALKEY_ADDR": "valkey-cart:6379"}
DOWN = ("UNAVAILABLE", "It was not possible to connect to the redis server(s). "
        "UnableToConnect on valkey-cart:6379/Interactive, SocketFailure")


def fresh():
    service.CONNECTED.clear()


def add(ctx, user, product, quantity):
    service.AddItem(ctx, {"user_id": user, "item": {"product_id": product, "quantity": quantity}})


def test_added_items_are_merged_per_product_and_expire_in_an_hour():
    fresh()
    ctx = TestContext(env=ENV)
    add(ctx, "u1", "OLJCESPC7Z", 2)
    add(ctx, "u1", "OLJCESPC7Z", 3)
    add(ctx, "u1", "66VCHSJNUP", 1)
    cart = service.GetCart(ctx, {"user_id": "u1"})
    assert cart["user_id"] == "u1"
    assert cart["items"] == [{"product_id": "OLJCESPC7Z", "quantity": 5},
                             {"product_id": "66VCHSJNUP", "quantity": 1}]
    store = ctx.stores["valkey-cart:6379"]
    assert store.ttl["u1"] == 3600
    assert "cart" in store.hashes["u1"]
    assert store.strings["cart"] == "OK"  # the connect-time small test


def test_logs_of_the_store():
    fresh()
    ctx = TestContext(env=ENV)
    add(ctx, "u1", "OLJCESPC7Z", 2)
    service.GetCart(ctx, {"user_id": "u1"})
    service.EmptyCart(ctx, {"user_id": "u1"})
    assert ctx.logged("info") == [
        "AddItemAsync called with userId=u1, productId=OLJCESPC7Z, quantity=2",
        "Successfully connected to Redis",
        "GetCartAsync called with userId=u1",
        "EmptyCartAsync called with userId=u1",
    ]


def test_unknown_user_has_a_new_empty_cart():
    fresh()
    assert service.GetCart(TestContext(env=ENV), {"user_id": "nobody"}) == {"user_id": "", "items": []}


def test_empty_cart_keeps_an_empty_cart():
    fresh()
    ctx = TestContext(env=ENV)
    add(ctx, "u1", "6E92ZMYYFZ", 1)
    service.EmptyCart(ctx, {"user_id": "u1"})
    assert service.GetCart(ctx, {"user_id": "u1"})["items"] == []


def test_any_quantity_is_added_without_checks():
    fresh()
    ctx = TestContext(env=ENV)
    add(ctx, "u1", "6E92ZMYYFZ", 5000)
    add(ctx, "", "", 0)
    assert service.GetCart(ctx, {"user_id": "u1"})["items"][0]["quantity"] == 5000


def test_valkey_down_is_a_failed_precondition_with_the_exception_text():
    fresh()
    ctx = TestContext(env=ENV, datastore_error=DOWN)
    with raises(ctx.RpcError) as err:
        service.GetCart(ctx, {"user_id": "u1"})
    assert err.value.code == "FAILED_PRECONDITION"
    assert err.value.message == (
        "Can't access cart storage. System.ApplicationException: Wasn't able to connect to redis\n"
        "   at cart.cartstore.ValkeyCartStore.EnsureRedisConnected() in "
        "/usr/src/app/src/cartstore/ValkeyCartStore.cs:line 101\n"
        "   at cart.cartstore.ValkeyCartStore.GetCartAsync(String userId) in "
        "/usr/src/app/src/cartstore/ValkeyCartStore.cs:line 218")
    assert ctx.logged("error") == ["Wasn't able to connect to redis"]


def test_connection_lost_after_open_is_a_redis_connection_exception_then_a_reconnect():
    fresh()
    add(TestContext(env=ENV), "u1", "6E92ZMYYFZ", 1)
    down = TestContext(env=ENV, datastore_error=DOWN)
    with raises(down.RpcError) as err:
        service.GetCart(down, {"user_id": "u1"})
    assert err.value.message.startswith(
        "Can't access cart storage. StackExchange.Redis.RedisConnectionException: "
        "No connection is active/available to service this operation: PING; UnableToConnect on "
        "valkey-cart:6379/Interactive")
    assert down.logged("info")[-1] == "Connection failed. Disposing the object"
    with raises(down.RpcError) as err:
        service.GetCart(down, {"user_id": "u1"})
    assert "System.ApplicationException: Wasn't able to connect to redis" in err.value.message
    back = TestContext(env=ENV)
    service.GetCart(back, {"user_id": "u1"})
    assert "Successfully connected to Redis" in back.logged("info")


def test_cart_failure_flag_empties_through_the_bad_store():
    fresh()
    ctx = TestContext(env=ENV, flags={"cartFailure": True}, datastore_error=DOWN)
    with raises(ctx.RpcError) as err:
        service.EmptyCart(ctx, {"user_id": "u1"})
    assert "EmptyCartAsync(String userId) in /usr/src/app/src/cartstore/ValkeyCartStore.cs:line 194" \
        in err.value.message
    assert ctx.logged("error") == ["Wasn't able to connect to redis"]
    assert service.CONNECTED == {}  # neither store is marked open after the failed connect


def test_start_needs_valkey_addr():
    fresh()
    ctx = TestContext(env={})
    with raises(ctx.Exit) as err:
        service.init(ctx)
    assert err.value.code == 1
    assert ctx.logged() == ["VALKEY_ADDR environment variable is required."]


def test_start_fails_when_valkey_is_unreachable():
    fresh()
    ctx = TestContext(env=ENV, datastore_error=DOWN)
    with raises(ctx.Exit) as err:
        service.init(ctx)
    assert err.value.code == 134
    assert ctx.logged("error") == ["Wasn't able to connect to redis",
                                   "Unhandled exception. System.ApplicationException: "
                                   "Wasn't able to connect to redis"]


def test_line_lookup_has_single_or_default_semantics():
    lines = [{"product_id": "P", "quantity": 1}, {"product_id": "P", "quantity": 1}]
    assert dotnet.single_or_default(lines, "Q") is None
    with raises(dotnet.DotNetException) as err:
        dotnet.single_or_default(lines, "P")
    assert err.value.text() == ("System.InvalidOperationException: "
                                "Sequence contains more than one matching element")


def test_parse_int_throws_like_int_parse():
    assert dotnet.parse_int("60") == 60
    with raises(dotnet.DotNetException) as err:
        dotnet.parse_int(None)
    assert err.value.text() == "System.ArgumentNullException: Value cannot be null. (Parameter 's')"
    with raises(dotnet.DotNetException) as err:
        dotnet.parse_int("1h")
    assert err.value.message == "The input string '1h' was not in a correct format."
