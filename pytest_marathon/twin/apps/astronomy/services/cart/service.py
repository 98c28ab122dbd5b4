"""cart: carts kept in valkey-cart, one hash per user (C#, ASP.NET Core gRPC, StackExchange.Redis).

Upstream: open-telemetry/opentelemetry-demo 2.2.0 src/cart/src/cartstore/ValkeyCartStore.cs
(EnsureRedisConnected, AddItemAsync, GetCartAsync, EmptyCartAsync), src/cart/src/services/
CartService.cs and src/cart/src/Program.cs. Each cart is a hash keyed by the user id whose field
`cart` holds the Cart (protobuf bytes upstream, JSON here); every write renews a 60-minute expiry.
The store validates nothing. Every exception inside a store method is rethrown as
FailedPrecondition "Can't access cart storage. {ex}" (the exception's ToString: type, message,
frames); ASP.NET Core then logs the status itself (the engine writes that line). The connection is
opened once per process and reopened on the next call after StackExchange.Redis reports it failed;
a failed (re)open logs "Wasn't able to connect to redis" and throws ApplicationException.
The `cartFailure` flag sends EmptyCart to a second store built for badhost:1234 (Program.cs).
"""

import json

import dotnet

CART_FIELD = "cart"  # ValkeyCartStore.CartFieldName
EXPIRY_SECONDS = 60 * 60  # KeyExpireAsync(userId, TimeSpan.FromMinutes(60))
BAD_STORE_ADDR = "badhost:1234"
CONNECTED = {}  # per process: store address -> connection opened (the _isRedisConnectionOpened flag)
THROW_LINE = 101  # the ApplicationException in EnsureRedisConnected
CALL_LINES = {"AddItemAsync(String userId, String productId, Int32 quantity)": 143,
              "EmptyCartAsync(String userId)": 194, "GetCartAsync(String userId)": 218}


def connection_lost(ctx, addr, err, command):
    """A command on a connection that has gone: StackExchange.Redis' exception, and the
    ConnectionFailed handler marks the connection for reopening."""
    CONNECTED[addr] = False
    ctx.log("info", "Connection failed. Disposing the object")
    detail = err.message.replace("It was not possible to connect to the redis server(s). ", "")
    return dotnet.DotNetException("StackExchange.Redis.RedisConnectionException",
                                  f"No connection is active/available to service this operation: "
                                  f"{command}; {detail}")


def ensure_connected(ctx, addr, caller):
    """EnsureRedisConnected: reuse the open connection, else connect and run the small test."""
    if CONNECTED.get(addr):
        try:
            return ctx.datastore(addr)
        except ctx.RpcError as err:
            raise connection_lost(ctx, addr, err, "PING")
    try:
        store = ctx.datastore(addr)
        store.set("cart", "OK")  # the "small test" after connecting
        store.get("cart")
    except ctx.RpcError:
        ctx.log("error", "Wasn't able to connect to redis")
        raise dotnet.DotNetException("System.ApplicationException", "Wasn't able to connect to redis",
                                     [dotnet.frame("EnsureRedisConnected()", THROW_LINE),
                                      dotnet.frame(caller, CALL_LINES.get(caller, THROW_LINE))])
    ctx.log("info", "Successfully connected to Redis")
    CONNECTED[addr] = True
    return store


def storage_failure(ctx, ex):
    ctx.fail("FAILED_PRECONDITION", f"Can't access cart storage. {dotnet.from_builtin(ex).text()}")


def read_cart(ctx, addr, store, user_id):
    try:
        raw = store.hget(user_id, CART_FIELD)
    except ctx.RpcError as err:
        raise connection_lost(ctx, addr, err, f"HGET {user_id}")
    return None if raw is None else json.loads(raw)


def write_cart(ctx, addr, store, user_id, cart):
    try:
        store.hset(user_id, CART_FIELD, json.dumps(cart, sort_keys=True))
        store.expire(user_id, EXPIRY_SECONDS)
    except ctx.RpcError as err:
        raise connection_lost(ctx, addr, err, f"HSET {user_id}")


def valkey_addr(ctx):
    return ctx.env("VALKEY_ADDR", "")


def AddItem(ctx, request):
    ctx.work(0.5)
    user_id = request.get("user_id", "")
    item = request.get("item") or {}
    product_id = item.get("product_id", "")
    quantity = item.get("quantity", 0)
    ctx.log("info", f"AddItemAsync called with userId={user_id}, productId={product_id}, "
                    f"quantity={quantity}")
    addr = valkey_addr(ctx)
    try:
        store = ensure_connected(ctx, addr, "AddItemAsync(String userId, String productId, Int32 quantity)")
        cart = read_cart(ctx, addr, store, user_id)
        if cart is None:
            cart = {"user_id": user_id, "items": [{"product_id": product_id, "quantity": quantity}]}
        else:
            existing = dotnet.single_or_default(cart["items"], product_id)
            if existing is None:
                cart["items"].append({"product_id": product_id, "quantity": quantity})
            else:
                existing["quantity"] = existing["quantity"] + quantity
        write_cart(ctx, addr, store, user_id, cart)
    except ctx.RpcError:
        raise
    except Exception as ex:  # the store's catch-all
        storage_failure(ctx, ex)
    return {}


def GetCart(ctx, request):
    ctx.work(0.3)
    user_id = request.get("user_id", "")
    ctx.log("info", f"GetCartAsync called with userId={user_id}")
    addr = valkey_addr(ctx)
    try:
        store = ensure_connected(ctx, addr, "GetCartAsync(String userId)")
        cart = read_cart(ctx, addr, store, user_id)
    except ctx.RpcError:
        raise
    except Exception as ex:
        storage_failure(ctx, ex)
    if cart is None:
        return {"user_id": "", "items": []}  # `new Oteldemo.Cart()` for an unknown user
    return cart


def EmptyCart(ctx, request):
    ctx.work(0.3)
    user_id = request.get("user_id", "")
    addr = BAD_STORE_ADDR if ctx.flag("cartFailure", False) else valkey_addr(ctx)
    ctx.log("info", f"EmptyCartAsync called with userId={user_id}")
    try:
        store = ensure_connected(ctx, addr, "EmptyCartAsync(String userId)")
        write_cart(ctx, addr, store, user_id, {"user_id": "", "items": []})
    except ctx.RpcError:
        raise
    except Exception as ex:
        storage_failure(ctx, ex)
    return {}


def init(ctx):
    """Program.cs: VALKEY_ADDR is required; the store singleton is resolved (and connects)
    before app.Run, so a failed connect is an unhandled exception at start."""
    addr = valkey_addr(ctx)
    if not addr:
        ctx.log("info", "VALKEY_ADDR environment variable is required.")
        raise ctx.Exit(1)
    try:
        ensure_connected(ctx, addr, "Initialize()")
    except dotnet.DotNetException as ex:
        ctx.log("error", f"Unhandled exception. {ex.kind}: {ex.message}")
        raise ctx.Exit(134)
