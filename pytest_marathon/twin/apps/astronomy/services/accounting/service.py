"""accounting: consumes `orders` and books each order in PostgreSQL (C#, Confluent.Kafka, EF Core).

Upstream: open-telemetry/opentelemetry-demo 2.2.0 src/accounting/Consumer.cs (StartListening,
ProcessMessage, BuildConsumer), Entities.cs, Log.cs, Program.cs. Group `accounting`, earliest,
auto-commit. Per record: log "Order details: {@OrderResult}." (the OrderResult's JSON form), then,
when DB_CONNECTION_STRING is set, add an order row, one orderitem row per item and a shipping row
to ONE long-lived DbContext and SaveChanges (a transaction). Any exception in ProcessMessage is
logged as "Order parsing failed:" and the loop goes on (the offset is committed regardless, so a
database outage loses orders without lag). Two 2.2.0 behaviours of that DbContext are kept: saved
entities stay tracked (a redelivered order id cannot be added again: EF's identity-resolution
error; memory grows with every order), and entities of a failed SaveChanges stay Added and are
written again by the next SaveChanges. EF Core logs a failed command and a failed save at Error
on its own (RelationalEventId.CommandError, CoreEventId.SaveChangesFailed). An exception outside
ProcessMessage is unhandled and ends the process (.NET prints "Unhandled exception.", exit 134).
"""

import json

import dotnet

ORDER_SQL = 'INSERT INTO accounting."order" (order_id) VALUES ($1)'
ITEM_SQL = ("INSERT INTO accounting.orderitem (item_cost_currency_code, item_cost_units, "
            "item_cost_nanos, product_id, quantity, order_id) VALUES ($1, $2, $3, $4, $5, $6)")
SHIPPING_SQL = ("INSERT INTO accounting.shipping (shipping_tracking_id, shipping_cost_currency_code, "
                "shipping_cost_units, shipping_cost_nanos, street_address, city, state, country, "
                "zip_code, order_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)")
CONTEXT = {"tracked": {}, "added": []}  # the DbContext: tracked keys, entities waiting to be saved
DB_NAME = "otel"


def camel(name):
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def protobuf_json(value):
    """Google.Protobuf's JsonFormatter (what OrderResult.ToString() gives): camelCase names,
    int64 as strings, default values left out."""
    if hasattr(value, "items"):  # a message
        parts = []
        for key in value:
            item = value[key]
            if item in ("", 0, None, [], {}):
                continue
            text = f'"{item}"' if key == "units" else protobuf_json(item)
            parts.append(f'"{camel(key)}": {text}')
        return "{ " + ", ".join(parts) + " }" if parts else "{ }"
    if hasattr(value, "append"):  # a repeated field
        return "[ " + ", ".join(protobuf_json(item) for item in value) + " ]"
    return json.dumps(value)


def track(kind, key, values, sql):
    """DbContext.Add: a key already tracked cannot be tracked twice."""
    tracked = CONTEXT["tracked"]
    if (kind, key) in tracked:
        raise dotnet.DotNetException(
            "System.InvalidOperationException",
            f"The instance of entity type '{kind}' cannot be tracked because another instance with the "
            f"key value '{{{key}}}' is already being tracked. When attaching existing entities, ensure "
            "that only one entity instance with a given key value is attached.")
    tracked[(kind, key)] = True
    CONTEXT["added"].append((sql, values))


def placeholders(sql):
    for number in range(10, 0, -1):
        sql = sql.replace(f"${number}", f"@p{number - 1}")
    return sql


def save_changes(ctx, db):
    """SaveChanges: the Added entities in one transaction; they stay Added when it fails."""
    added = CONTEXT["added"]
    if not added:
        return
    statement = added[0][0]
    try:
        db.execute("BEGIN")
        for sql, values in added:
            statement = sql
            db.execute(sql, *values)
        db.execute("COMMIT")
    except ctx.SqlError as err:
        if err.kind == "server":
            try:
                db.execute("ROLLBACK")
            except ctx.SqlError:
                pass
            params = ", ".join(f"@p{i}='?'" for i in range(statement.count("$")))
            ctx.log("error", f"Failed executing DbCommand (2ms) [Parameters=[{params}], CommandType='Text', "
                             f"CommandTimeout='30']\n{placeholders(statement)}")
            wrapped = dotnet.DotNetException(
                "Microsoft.EntityFrameworkCore.DbUpdateException",
                "An error occurred while saving the entity changes. See the inner exception for details.",
                dotnet.npgsql_error(err))
        else:
            ctx.log("error", f"An error occurred using the connection to database '{DB_NAME}' on server "
                             "'tcp://postgresql:5432'.")
            wrapped = dotnet.npgsql_error(err)
        ctx.log("error", "An exception occurred in the database while saving changes for context type "
                         f"'Accounting.DBContext'.\n{wrapped.text()}")
        raise wrapped
    CONTEXT["added"] = []


def process_message(ctx, order):
    # proto3 leaves a zero field off the wire and C# reads it back as 0 (Google.Protobuf), so a
    # whole-dollar amount (nanos 0) or a free shipping cost (units 0) is an ordinary order
    try:
        ctx.log("info", f"Order details: {protobuf_json(order)}.")
        dsn = ctx.env("DB_CONNECTION_STRING")
        if dsn is None:
            return
        order_id = order["order_id"]
        track("OrderEntity", f"Id: {order_id}", [order_id], ORDER_SQL)
        for line in order.get("items", []):
            cost = line["cost"]
            item = line["item"]
            track("OrderItemEntity", f"ProductId: {item['product_id']}, OrderId: {order_id}",
                  [cost["currency_code"], cost.get("units", 0), cost.get("nanos", 0), item["product_id"],
                   item["quantity"], order_id], ITEM_SQL)
        shipping = order["shipping_cost"]
        address = order["shipping_address"]
        track("ShippingEntity", f"ShippingTrackingId: {order['shipping_tracking_id']}",
              [order["shipping_tracking_id"], shipping["currency_code"], shipping.get("units", 0),
               shipping.get("nanos", 0), address["street_address"], address["city"], address["state"],
               address["country"], address["zip_code"], order_id], SHIPPING_SQL)
        save_changes(ctx, ctx.sql(dsn))
    except ctx.Exit:
        raise
    except Exception as ex:
        ctx.log("error", f"Order parsing failed:\n{dotnet.from_builtin(ex).text()}")


def consume(ctx, record):
    """One turn of StartListening's loop for a consumed record."""
    ctx.work(0.3)
    try:
        process_message(ctx, record.get("value") or {})
    except dotnet.DotNetException as ex:  # nothing catches it: the host dies
        ctx.log("error", f"Unhandled exception. {ex.text()}")
        raise ctx.Exit(134)


def init(ctx):
    """Program.cs and the Consumer constructor."""
    ctx.log("info", "Accounting service started")
    servers = ctx.env("KAFKA_ADDR")
    if servers is None:
        ctx.log("error", "Unhandled exception. System.InvalidOperationException: "
                         "The KAFKA_ADDR environment variable is not set.")
        raise ctx.Exit(134)
    ctx.log("info", f"Connecting to Kafka: {servers}")
