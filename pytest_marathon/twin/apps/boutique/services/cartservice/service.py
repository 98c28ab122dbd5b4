"""cartservice: carts kept in redis-cart, one hash per user (C# original, RedisCartStore)."""

import json

CART_FIELD = "cart"
MAX_QUANTITY = 1000


def open_store(ctx):
    """Connect to redis (no REDIS_ADDR: the in-memory store); failures are FailedPrecondition."""
    try:
        return ctx.datastore(ctx.env("REDIS_ADDR"), password=ctx.env("REDIS_PASSWORD")) if ctx.env("REDIS_ADDR", "") else MEMORY_STORE
    except ctx.RpcError as err:
        ctx.log("error", f"Can't access cart storage. {err.message}")
        ctx.fail("FAILED_PRECONDITION", f"Can't access cart storage. {err.message}")


def load_cart(ctx, store, user_id):
    try:
        raw = store.hget(user_id, CART_FIELD)
    except ctx.RpcError as err:
        ctx.fail("FAILED_PRECONDITION", f"Can't access cart storage. {err.message}")
    if raw is None:
        return {"user_id": user_id, "items": []}
    return json.loads(raw)


def save_cart(ctx, store, cart):
    try:
        store.hset(cart["user_id"], CART_FIELD, json.dumps(cart, sort_keys=True))
    except ctx.RpcError as err:
        ctx.fail("FAILED_PRECONDITION", f"Can't access cart storage. {err.message}")


def AddItem(ctx, request):
    ctx.work(1.0)
    user_id = request.get("user_id", "")
    item = request.get("item", {})
    product_id = item.get("product_id", "")
    quantity = item.get("quantity", 0)
    ctx.log("info", f"AddItemAsync called with userId={user_id}, productId={product_id}, "
                    f"quantity={quantity}")
    if not user_id or not product_id:
        ctx.fail("INVALID_ARGUMENT", "user_id and product_id are required")
    if quantity <= 0 or quantity > MAX_QUANTITY:
        ctx.fail("INVALID_ARGUMENT", f"invalid quantity {quantity}")
    store = open_store(ctx)
    cart = load_cart(ctx, store, user_id)
    for existing in cart["items"]:
        if existing["product_id"] == product_id:
            existing["quantity"] = existing["quantity"] + quantity
            break
    else:
        cart["items"].append({"product_id": product_id, "quantity": quantity})
    save_cart(ctx, store, cart)
    return {}


def GetCart(ctx, request):
    ctx.work(0.5)
    user_id = request.get("user_id", "")
    ctx.log("info", f"GetCartAsync called with userId={user_id}")
    store = open_store(ctx)
    return load_cart(ctx, store, user_id)


def EmptyCart(ctx, request):
    ctx.work(0.5)
    user_id = request.get("user_id", "")
    ctx.log("info", f"EmptyCartAsync called with userId={user_id}")
    store = open_store(ctx)
    save_cart(ctx, store, {"user_id": user_id, "items": []})
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
