"""Pinned against open-telemetry/opentelemetry-demo 2.2.0
src/fraud-detection/src/main/kotlin/frauddetection/main.kt."""

from testing import TestContext, raises

import service

ENV = {"KAFKA_ADDR": "kafka:9092"}


def order(order_id="o-1"):
    return {
        "order_id": order_id, "shipping_tracking_id": "t-1",
        "shipping_cost": {"currency_code": "USD", "units": 8, "nanos": 990000000},
        "shipping_address": {"street_address": "1600 Amphitheatre Parkway", "city": "Mountain View",
                             "state": "CA", "country": "United States", "zip_code": "94043"},
        "items": [{"item": {"product_id": "66VCHSJNUP", "quantity": 1},
                   "cost": {"currency_code": "USD", "units": 349, "nanos": 950000000}}],
    }


def record(value, offset=0):
    return {"topic": "orders", "partition": 0, "offset": offset, "key": None, "value": value, "headers": {}}


def fresh():
    service.STATE["total"] = 0


def test_each_order_is_counted_and_logged():
    fresh()
    ctx = TestContext(env=ENV)
    service.consume(ctx, record(order("o-1")))
    service.consume(ctx, record(order("o-2"), 1))
    assert ctx.logged("info") == [
        "Consumed record with orderId: o-1, and updated total count to: 1",
        "Consumed record with orderId: o-2, and updated total count to: 2"]
    assert ctx.slept_ms == 0


def test_the_count_is_per_process_and_survives_records_without_fields():
    fresh()
    ctx = TestContext(env=ENV)
    service.consume(ctx, record({"order_id": "o-1"}))
    assert service.STATE["total"] == 1


def test_queue_problems_flag_sleeps_a_second_per_record():
    fresh()
    ctx = TestContext(env=ENV, flags={"kafkaQueueProblems": 100})
    service.consume(ctx, record(order()))
    assert ctx.slept_ms == 1000
    assert ctx.logged("info")[0] == "FeatureFlag 'kafkaQueueProblems' is enabled, sleeping 1 second"


def test_start_needs_kafka_addr():
    ctx = TestContext(env={})
    with raises(ctx.Exit) as err:
        service.init(ctx)
    assert err.value.code == 1
    assert ctx.logged() == ["KAFKA_ADDR is not supplied"]
