"""The Astronomy Shop twin as a whole: its active and standby sites, a quiet run, its probes.

The app runs one replica of every component per zone; the load enters in zone-a (the active
site) and every Service prefers the caller's zone, so the standby site in zone-b serves only when
the active site's replica cannot (docs/fidelity.md, "Astronomy Shop")."""

from __future__ import annotations

import pytest

from pytest_marathon.alerting.engine import AlertEngine
from pytest_marathon.alerting.rules import load_rule_pack
from pytest_marathon.twin.engine import Twin


def _zone(twin: Twin, pod_name: str) -> str:
    return twin.cluster.nodes[twin.cluster.pods[pod_name].node].zone


def _errors(twin: Twin, since: float) -> float:
    samples = twin.sli_samples(since=since)
    asked = sum(s.q for s in samples)
    return sum(s.q * s.e for s in samples) / asked if asked else 0.0


def _frontend_hops(twin: Twin, since: float) -> list[tuple[str, float]]:
    """(zone of the frontend pod, frontend-proxy's client span ms) of each traced request."""
    hops = []
    for summary in twin.traces(since=since, limit=50):
        spans = twin.trace(summary["trace_id"])["spans"]
        server = next((s for s in spans if s["service"] == "frontend" and s["kind"] == "SPAN_KIND_SERVER"), None)
        client = next((s for s in spans if s["service"] == "frontend-proxy" and s["kind"] == "SPAN_KIND_CLIENT"), None)
        if server and client:
            hops.append((_zone(twin, server["pod"]), client["duration_ms"] - server["duration_ms"]))
    return hops


@pytest.fixture(scope="module")
def warm() -> Twin:
    twin = Twin("astronomy", seed=1)
    twin.advance_to(120.0)
    return twin


def test_the_active_site_serves_everything_while_it_is_healthy(warm: Twin):
    hops = _frontend_hops(warm, 0.0)
    assert hops and {zone for zone, _ in hops} == {"zone-a"}
    assert max(ms for _, ms in hops) < 10.0
    assert _errors(warm, 0.0) == 0.0


def test_killing_the_active_frontend_keeps_the_entry_point_serving_through_the_standby():
    twin = Twin("astronomy", seed=1)
    twin.advance_to(60.0)
    # Chaos Mesh pod-kill of the zone-a replica, repeated so its replacement never serves
    twin.chaos_start("pod_kill", "frontend", zone="zone-a", interval=5)
    twin.advance_to(180.0)
    hops = _frontend_hops(twin, 70.0)
    assert hops and {zone for zone, _ in hops} == {"zone-b"}
    # the proxy -> frontend hop now crosses the zones both ways: 2 x 25 ms in its client span
    assert min(ms for _, ms in hops) >= 50.0
    assert _errors(twin, 70.0) == 0.0


def test_the_same_kill_without_a_standby_replica_fails_the_users():
    twin = Twin("astronomy", seed=1)
    twin.advance_to(60.0)
    twin.chaos_start("pod_kill", "frontend", interval=5)  # both sites' replicas
    twin.advance_to(180.0)
    assert _errors(twin, 70.0) > 0.5


def test_a_network_fault_on_one_zones_replica_leaves_the_other_zone_alone():
    twin = Twin("astronomy", seed=1)
    twin.advance_to(60.0)
    twin.chaos_start("network_delay", "product-catalog", zone="zone-b", delay_ms=800)
    twin.advance_to(120.0)
    assert all(s.l == 0.0 for s in twin.sli_samples(since=70.0))
    twin.chaos_start("network_delay", "product-catalog", zone="zone-a", delay_ms=800)
    twin.advance_to(180.0)
    assert max(s.l for s in twin.sli_samples(since=130.0)) > 0.0


@pytest.mark.parametrize("task", ["index", "browse_product", "get_recommendations", "get_ads", "view_cart",
                                  "add_to_cart", "checkout"])
def test_a_request_probe_of_every_load_task_is_healthy_on_the_quiet_app(warm: Twin, task: str):
    assert warm.probe({"kind": "request", "task": task})


def test_a_quiet_90_minutes_raise_at_most_two_alerts():
    twin = Twin("astronomy", seed=2)
    engine = AlertEngine(load_rule_pack("astronomy"), twin.store, twin.namespace)
    t = 0.0
    while t < 90 * 60:
        t += 15.0
        twin.advance_to(t)
        engine.evaluate(t)
    fired = [a for a in engine.history() if a["fired_at"] is not None]
    assert len(fired) <= 2, fired


def _errors_of(twin: Twin, service: str, since: float, contains: str) -> list[str]:
    return [line["message"] for line in twin.logs(service=service, since=since, level="error", limit=500)
            if contains in line["message"]]


def test_a_rotated_database_password_fails_the_catalog_until_postgres_restarts():
    twin = Twin("astronomy", seed=1)
    twin.advance_to(60.0)
    handle = twin.chaos_start("credential_rotation", "postgresql", user="otelu", new_password="otelp-2026")
    twin.advance_to(360.0)
    # product-catalog answers NotFound for any database error (upstream main.go GetProduct), so
    # the product pages fail while its clients hold the chart's password
    assert _errors(twin, 120.0) > 0.2
    failed = [s for s in twin.traces(since=120.0, errors_only=True, limit=20)]
    assert failed
    twin.restart("postgresql")  # a fresh container runs the init script: the chart's password again
    twin.advance_to(480.0)
    assert _errors(twin, 440.0) == 0.0
    twin.chaos_stop(handle)


def test_an_outage_of_the_active_sites_valkey_fails_carts_there_and_leaves_the_standby_serving():
    twin = Twin("astronomy", seed=1)
    twin.advance_to(60.0)
    twin.chaos_start("datastore_outage", "valkey-cart", zone="zone-a")
    twin.advance_to(240.0)
    # no probe in the chart: the zone-a valkey pod stays Ready, so its own zone keeps dialling it
    assert _errors(twin, 70.0) > 0.0
    failed = [line["message"] for line in twin.logs(service="frontend", since=70.0, level="error", limit=50)]
    assert any("Can't access cart storage." in message for message in failed)
    assert all(_zone(twin, p.name) == "zone-a" for p in twin.cluster.pods_of("valkey-cart")
               if p.name in twin.down_datastores)


def test_a_consumer_whose_broker_is_gone_logs_its_clients_bootstrap_failures():
    twin = Twin("astronomy", seed=1)
    twin.advance_to(60.0)
    twin.update_config("accounting", env={"KAFKA_ADDR": "kafka:9093"})
    twin.update_config("fraud-detection", env={"KAFKA_ADDR": "kafka-primary:9092"})
    twin.advance_to(240.0)
    assert _errors_of(twin, "accounting", 60.0, "kafka:9093/bootstrap")
    crashed = _errors_of(twin, "fraud-detection", 60.0, "No resolvable bootstrap urls given in bootstrap.servers")
    assert crashed and crashed[0].startswith('Exception in thread "main" org.apache.kafka')
    assert any(p.restart_count for p in twin.cluster.pods_of("fraud-detection"))
