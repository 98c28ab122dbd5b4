"""Kafka and PostgreSQL in the twin (issue 17): a producer and consumers through a broker per
kafka pod, SQL through `ctx.sql` with PostgreSQL's texts, and the exporter series. Seen through
the Twin's public API on the small app in tests/fixtures/apps/datashop."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_marathon.twin.engine import Twin
from pytest_marathon.twin.kafka import Broker

APPS = Path(__file__).parent / "fixtures" / "apps"


def _twin(seed: int = 3) -> Twin:
    twin = Twin("datashop", seed=seed, apps_dir=APPS)
    twin.advance_to(60.0)
    return twin


def _last(twin: Twin, name: str, **labels: str) -> float | None:
    for series in twin.store.series(name):
        if all(series.labels.get(k) == v for k, v in labels.items()) and series.values:
            return series.values[-1][1] if isinstance(series.values[-1], tuple) else series.values[-1]
    return None


def _broker(twin: Twin) -> Broker:
    (name,) = [n for n in twin.brokers if n in twin.cluster.pods and twin.cluster.pods[n].running]
    return twin.brokers[name]



def _call(twin: Twin, request: dict):
    """One RPC to the catalog's Query handler through the runtime (as a caller pod would)."""
    from pytest_marathon.twin.runtime import _Trace
    pod = next(p for p in twin.cluster.pods.values() if p.deployment == "catalog" and p.ready)
    code, message, response, _ms = twin.runtime.serve(pod, "Query", request, _Trace("0" * 32, "r", twin.now), "",
                                                      30_000.0)
    assert code == "OK", message
    return response


@pytest.fixture(scope="module")
def twin() -> Twin:
    return _twin()


def test_lag_grows_while_the_consumer_is_slow_and_drains_when_it_recovers() -> None:
    twin = _twin(5)
    assert _broker(twin).lag("accounting", "orders") < 10
    # 2 s per record: a tick handles ~2-3 orders while checkout publishes many more
    assert twin.update_config("accounting", env={"CONSUME_MS": "2000"}).ok
    twin.advance_to(240.0)
    grown = _broker(twin).lag("accounting", "orders")
    assert grown > 50
    assert _last(twin, "kafka_consumer_group_lag", group="accounting", topic="orders", partition="0") > 50
    assert twin.update_config("accounting", env={"CONSUME_MS": "1"}).ok
    twin.advance_to(420.0)
    assert _broker(twin).lag("accounting", "orders") < 10
    assert _last(twin, "kafka_consumer_group_lag_sum", group="accounting", topic="orders") < 10
    # fraud-detection kept up all along
    assert _broker(twin).lag("fraud-detection", "orders") < 10


def test_latest_skips_what_was_produced_before_the_group_joined_earliest_reads_it() -> None:
    twin = _twin(7)
    assert twin.scale("accounting", 0).ok and twin.scale("fraud", 0).ok
    twin.advance_to(90.0)
    broker = _broker(twin)
    produced = broker.end_offset("orders")
    # a broker restart forgets the groups: both join afresh on a log the producer refilled
    assert twin.chaos_start("pod_kill", "kafka")
    twin.advance_to(150.0)
    broker = _broker(twin)
    backlog = broker.end_offset("orders")
    assert backlog > 0 and broker.groups == {}
    assert twin.scale("accounting", 1).ok and twin.scale("fraud", 1).ok
    twin.advance_to(200.0)
    handled = [line for line in twin.logs(service="fraud", contains="Consumed record", limit=1000)
               if line["t"] >= 150.0]
    rows = _call(twin, {"sql": 'SELECT count(*) AS n FROM accounting."order"'})["rows"][0]["n"]
    assert produced > 0
    assert rows >= backlog  # earliest: accounting stored the whole backlog
    assert len(handled) < rows  # latest: fraud saw only what came after it joined


def test_a_broker_restart_loses_the_log(twin: Twin) -> None:
    fresh = _twin(9)
    old = _broker(fresh)
    before = old.end_offset("orders")
    assert before > 0
    fresh.chaos_start("pod_kill", "kafka")
    fresh.advance_to(fresh.now + 15.0)
    new = _broker(fresh)
    assert new is not old and new.start_offset("orders") == 0 and new.end_offset("orders") < before


def test_sql_query_insert_and_postgres_error_texts(twin: Twin) -> None:
    rows = _call(twin, {"sql": "SELECT id, price_units, price_nanos FROM catalog.products WHERE id = $1",
                        "params": ["66VCHSJNUP"]})["rows"]
    assert rows == [{"id": "66VCHSJNUP", "price_units": 349, "price_nanos": 950000000}]
    assert _call(twin, {"sql": 'INSERT INTO accounting."order" (order_id) VALUES ($1)', "params": ["t-1"],
                        "execute": True}) == {"count": 1}
    cases = [
        ({"sql": "SELECT nope FROM catalog.products"}, "42703", 'column "nope" does not exist'),
        ({"sql": "SELECT * FROM catalog.product"}, "42P01", 'relation "catalog.product" does not exist'),
        ({"sql": "SELEC id FROM catalog.products"}, "42601", 'syntax error at or near "SELEC"'),
        ({"sql": 'INSERT INTO accounting."order" (order_id) VALUES ($1)', "params": ["t-1"], "execute": True},
         "23505", 'duplicate key value violates unique constraint "order_pkey"'),
        ({"sql": "DELETE FROM catalog.products", "execute": True}, "42501", "permission denied for table products"),
    ]
    for request, sqlstate, message in cases:
        assert _call(twin, request) == {"sqlstate": sqlstate, "message": message, "kind": "server"}


def test_a_wrong_password_fails_authentication(twin: Twin) -> None:
    answer = _call(twin, {"dsn": "postgres://otelu:wrong@postgresql/otel?sslmode=disable", "sql": "SELECT 1"})
    assert answer == {"sqlstate": "28P01", "message": 'password authentication failed for user "otelu"',
                      "kind": "auth"}


def test_postgres_down_refuses_in_the_drivers_words() -> None:
    twin = _twin(11)
    handle = twin.chaos_start("datastore_outage", "postgresql")
    ip = twin.runtime.cluster_ip("postgresql")
    answer = _call(twin, {"sql": "SELECT 1"})
    assert answer == {"sqlstate": "08006", "message": f"dial tcp {ip}:5432: connect: connection refused",
                      "kind": "refused"}
    twin.advance_to(90.0)
    # the C# consumer (Npgsql) words it its own way; its exception escapes `consume` and is logged
    assert twin.logs(service="accounting", level="error", contains=f"Failed to connect to {ip}:5432", limit=1)
    assert _last(twin, "pg_up", instance="postgresql:5432") == 0.0
    twin.chaos_stop(handle)
    twin.advance_to(120.0)
    assert _last(twin, "pg_up", instance="postgresql:5432") == 1.0


def test_checkout_fails_with_saramas_text_when_kafka_is_down() -> None:
    twin = _twin(13)
    twin.chaos_start("datastore_outage", "kafka")
    twin.advance_to(90.0)
    ip = twin.runtime.cluster_ip("kafka")
    lines = twin.logs(service="checkout", level="error", limit=5)
    assert lines and lines[-1]["message"] == ("Failed to write message: kafka: client has run out of available "
                                              f"brokers to talk to: dial tcp {ip}:9092: connect: connection refused")


def test_the_exporter_series_are_scraped(twin: Twin) -> None:
    names = set(twin.store.names())
    assert {"kafka_consumer_group_lag", "kafka_consumer_group_lag_sum", "kafka_consumer_group_members",
            "kafka_brokers", "pg_up", "pg_stat_database_numbackends", "pg_stat_database_xact_rollback"} <= names
    assert _last(twin, "kafka_consumer_group_members", group="accounting") == 1.0
    assert _last(twin, "kafka_brokers") == 1.0


def test_producer_and_consumer_spans_share_the_trace(twin: Twin) -> None:
    traces = twin.traces(service="fraud", limit=5)
    assert traces
    trace = twin.trace(traces[0]["trace_id"])
    kinds = {(s["name"], s["kind"]) for s in trace["spans"]}
    assert ("publish orders", "SPAN_KIND_PRODUCER") in kinds and ("process orders", "SPAN_KIND_CONSUMER") in kinds


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["produce", "consume"]), st.integers(1, 5)), max_size=40),
       st.integers(1, 30))
def test_lag_is_produced_minus_consumed_for_any_interleaving(steps, cap) -> None:
    broker = Broker(retention_cap=cap)
    broker.join("g", "orders", "earliest")
    produced = consumed = 0
    for op, n in steps:
        if op == "produce":
            for _ in range(n):
                broker.produce("orders", {"n": produced})
                produced += 1
        else:
            for record in broker.fetch("g", "orders", 0, n):
                assert record.value == {"n": consumed}  # nothing unread is ever dropped
                broker.commit("g", "orders", 0, record.offset + 1)
                consumed += 1
        assert broker.lag("g", "orders") == produced - consumed
