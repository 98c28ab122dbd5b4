"""cartservice: carts kept in redis-cart, one hash per user (C# original).

Upstream: GoogleCloudPlatform/microservices-demo v0.10.6 src/cartservice/src/cartstore/
RedisCartStore.cs (AddItemAsync, GetCartAsync, EmptyCartAsync) and services/CartService.cs. The
store keeps no rules of its own: any quantity is added, an unknown user has an empty cart, and
every failure inside a store method becomes FailedPrecondition "Can't access cart storage. {ex}"
(the exception's type and message). The service logs only its Console.WriteLine lines; the
status a handler raises is logged by ASP.NET Core itself.
"""

import json

import linq

# Microsoft.Extensions.Caching.StackExchangeRedis keeps an entry as a hash with a `data` field.
CART_FIELD = "data"
# StackExchange.Redis: connect/auth failures vs errors a redis command returns
CONNECTION_EXCEPTION = "StackExchange.Redis.RedisConnectionException"
SERVER_EXCEPTION = "StackExchange.Redis.RedisServerException"


def storage_error(ctx, err):
    """The RpcException RedisCartStore throws from its catch-all."""
    kind = CONNECTION_EXCEPTION if err.code in ("UNAVAILABLE", "UNAUTHENTICATED") else SERVER_EXCEPTION
    ctx.fail("FAILED_PRECONDITION", f"Can't access cart storage. {kind}: {err.message}")


def open_store(ctx):
    try:  # REDIS_ADDR is a StackExchange.Redis configuration string; without it, memory
        return ctx.datastore(ctx.env("REDIS_ADDR")) if ctx.env("REDIS_ADDR", "") else MEMORY_STORE
    except ctx.RpcError as err:
        storage_error(ctx, err)


def load_cart(ctx, store, user_id):
    try:
        raw = store.hget(user_id, CART_FIELD)
    except ctx.RpcError as err:
        storage_error(ctx, err)
    return None if raw is None else json.loads(raw)


def save_cart(ctx, store, user_id, cart):
    try:
        store.hset(user_id, CART_FIELD, json.dumps(cart, sort_keys=True))
    except ctx.RpcError as err:
        storage_error(ctx, err)


def AddItem(ctx, request):
    ctx.work(1.0)
    user_id = request.get("user_id", "")
    item = request.get("item", {})
    product_id = item.get("product_id", "")
    quantity = item.get("quantity", 0)
    ctx.log("info", f"AddItemAsync called with userId={user_id}, productId={product_id}, "
                    f"quantity={quantity}")
    store = open_store(ctx)
    cart = load_cart(ctx, store, user_id)
    if cart is None:
        cart = {"user_id": user_id, "items": [{"product_id": product_id, "quantity": quantity}]}
    else:
        try:
            existing = linq.single_or_default(cart["items"], product_id)
        except linq.InvalidOperation as ex:  # the store's catch-all
            ctx.fail("FAILED_PRECONDITION", f"Can't access cart storage. {ex.text()}")
        if existing is None:
            cart["items"].append({"product_id": product_id, "quantity": quantity})
        else:
            existing["quantity"] = existing["quantity"] + quantity
    save_cart(ctx, store, user_id, cart)
    return {}


def GetCart(ctx, request):
    ctx.work(0.5)
    user_id = request.get("user_id", "")
    ctx.log("info", f"GetCartAsync called with userId={user_id}")
    store = open_store(ctx)
    cart = load_cart(ctx, store, user_id)
    return {"user_id": "", "items": []} if cart is None else cart  # `new Cart()`


def EmptyCart(ctx, request):
    ctx.work(0.5)
    user_id = request.get("user_id", "")
    ctx.log("info", f"EmptyCartAsync called with userId={user_id}")
    store = open_store(ctx)
    save_cart(ctx, store, user_id, {"user_id": "", "items": []})
    return {}


class MemoryStore:
    """AddDistributedMemoryCache: the carts live in this process only."""

    def __init__(self):
        self.hashes = {}

    def hget(self, key, field):
        return self.hashes.get(key, {}).get(field)

    def hset(self, key, field, value):
        self.hashes.setdefault(key, {})[field] = value


MEMORY_STORE = MemoryStore()


def init(ctx):
    """Startup.ConfigureServices: without REDIS_ADDR the carts are kept in memory."""
    if not ctx.env("REDIS_ADDR", ""):
        ctx.log("info", "Redis cache host(hostname+port) was not specified. "
                        "Starting a cart service using in memory store")
