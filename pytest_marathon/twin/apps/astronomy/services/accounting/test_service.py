"""Pinned against open-telemetry/opentelemetry-demo 2.2.0 src/accounting/Consumer.cs."""

from testing import TestContext, TestSqlError, raises

import service

ENV = {"KAFKA_ADDR": "kafka:9092",
       "DB_CONNECTION_STRING": "Host=postgresql;Username=otelu;Password=otelp;Database=otel"}


def order(order_id="o-1", items=(("66VCHSJNUP", 1),), tracking="t-1"):
    return {
        "order_id": order_id, "shipping_tracking_id": tracking,
        "shipping_cost": {"currency_code": "USD", "units": 8, "nanos": 990000000},
        "shipping_address": {"street_address": "1600 Amphitheatre Parkway", "city": "Mountain View",
                             "state": "CA", "country": "United States", "zip_code": "94043"},
        "items": [{"item": {"product_id": p, "quantity": q},
                   "cost": {"currency_code": "USD", "units": 349, "nanos": 950000000}} for p, q in items],
    }


def record(value, offset=0):
    return {"topic": "orders", "partition": 0, "offset": offset, "key": None, "value": value, "headers": {}}


def fresh():
    service.CONTEXT["tracked"] = {}
    service.CONTEXT["added"] = []


def inserts(ctx):
    return [sql.split(" (")[0] for sql, _ in ctx.statements if sql.startswith("INSERT")]


def test_an_order_is_logged_and_booked_in_one_transaction():
    fresh()
    ctx = TestContext(env=ENV)
    service.consume(ctx, record(order(items=(("66VCHSJNUP", 1), ("OLJCESPC7Z", 2)))))
    assert [sql for sql, _ in ctx.statements][0] == "BEGIN"
    assert [sql for sql, _ in ctx.statements][-1] == "COMMIT"
    assert inserts(ctx) == ['INSERT INTO accounting."order"', "INSERT INTO accounting.orderitem",
                            "INSERT INTO accounting.orderitem", "INSERT INTO accounting.shipping"]
    assert ctx.statements[2][1] == ("USD", 349, 950000000, "66VCHSJNUP", 1, "o-1")
    line = ctx.logged("info")[0]
    assert line.startswith('Order details: { "orderId": "o-1", "shippingTrackingId": "t-1", '
                           '"shippingCost": { "currencyCode": "USD", "units": "8", "nanos": 990000000 }')
    assert line.endswith(".")
    assert ctx.logged("error") == []


def test_without_a_connection_string_orders_are_only_logged():
    fresh()
    ctx = TestContext(env={"KAFKA_ADDR": "kafka:9092"})
    service.consume(ctx, record(order()))
    assert ctx.statements == []
    assert len(ctx.logged("info")) == 1


def test_database_error_is_logged_three_times_and_the_order_retried_next_time():
    fresh()
    ctx = TestContext(env=ENV, sql={"INSERT INTO accounting.shipping": TestSqlError(
        "23505", 'duplicate key value violates unique constraint "shipping_pkey"')})
    service.consume(ctx, record(order()))
    errors = ctx.logged("error")
    assert errors[0].startswith("Failed executing DbCommand (2ms) [Parameters=[@p0='?', ")
    assert errors[0].endswith("VALUES (@p0, @p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9)")
    assert errors[1] == (
        "An exception occurred in the database while saving changes for context type "
        "'Accounting.DBContext'.\nMicrosoft.EntityFrameworkCore.DbUpdateException: An error occurred "
        "while saving the entity changes. See the inner exception for details.\n ---> "
        'Npgsql.PostgresException (0x80004005): 23505: duplicate key value violates unique constraint '
        '"shipping_pkey"')
    assert errors[2].startswith("Order parsing failed:\nMicrosoft.EntityFrameworkCore.DbUpdateException")
    assert "ROLLBACK" in [sql for sql, _ in ctx.statements]
    ok = TestContext(env=ENV)
    service.consume(ok, record(order("o-2", tracking="t-2"), 1))
    assert inserts(ok).count('INSERT INTO accounting."order"') == 2  # o-1 again, then o-2


def test_connection_failure_uses_npgsql_words():
    fresh()
    ctx = TestContext(env=ENV, sql={"BEGIN": TestSqlError(
        "08001", "Failed to connect to 10.12.0.9:5432", kind="refused")})
    service.consume(ctx, record(order()))
    assert ctx.logged("error") == [
        "An error occurred using the connection to database 'otel' on server 'tcp://postgresql:5432'.",
        "An exception occurred in the database while saving changes for context type "
        "'Accounting.DBContext'.\nNpgsql.NpgsqlException (0x80004005): Failed to connect to 10.12.0.9:5432",
        "Order parsing failed:\nNpgsql.NpgsqlException (0x80004005): Failed to connect to 10.12.0.9:5432",
    ]


def test_a_redelivered_order_cannot_be_tracked_twice():
    fresh()
    ctx = TestContext(env=ENV)
    service.consume(ctx, record(order()))
    service.consume(ctx, record(order(), 1))
    assert ctx.logged("error") == [
        "Order parsing failed:\nSystem.InvalidOperationException: The instance of entity type "
        "'OrderEntity' cannot be tracked because another instance with the key value '{Id: o-1}' is "
        "already being tracked. When attaching existing entities, ensure that only one entity instance "
        "with a given key value is attached."]


def test_a_malformed_order_is_a_parsing_failure():
    fresh()
    ctx = TestContext(env=ENV)
    service.consume(ctx, record({"order_id": "o-9"}))
    assert ctx.logged("error") == ["Order parsing failed:\nSystem.Collections.Generic."
                                   "KeyNotFoundException: The given key 'shipping_cost' was not "
                                   "present in the dictionary."]


def test_start_needs_kafka_addr():
    ctx = TestContext(env={})
    with raises(ctx.Exit) as err:
        service.init(ctx)
    assert err.value.code == 134
    assert ctx.logged() == ["Accounting service started",
                            "Unhandled exception. System.InvalidOperationException: "
                            "The KAFKA_ADDR environment variable is not set."]
