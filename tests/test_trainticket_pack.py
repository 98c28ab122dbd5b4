"""The Train Ticket rule pack (pack/trainticket.rules.yaml) on the trainticket twin: a broken service
pages within 3 minutes with the rules its callers' spans carry, a datastore scaled away pages as
down, and a fault-free 90-minute quiet run (scenarios/quiet.yaml, benign background releases
included, warm-up counted) raises at most two alerts.

The pack is evaluated every 15 s through `AlertEngine`, from the start of the warm-up, as the
runner does; benchmarks/trainticket_quiet.py drives the same runs and prints every alert."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_marathon.alerting.promtool import build_unit_test, promtool_path, run_promtool
from pytest_marathon.alerting.rules import load_rule_pack

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from trainticket_quiet import run  # noqa: E402

BREAK_AT = 120.0
WITHIN = 180.0


def test_scaling_travel_service_to_zero_pages_its_callers_within_3_minutes() -> None:
    result = run(5, background=False, end=BREAK_AT + WITHIN, broken="ts-travel-service", break_at=BREAK_AT)
    assert result["errors"] == []
    before = [a for a in result["history"] if a["fired_at"] is not None and a["fired_at"] <= BREAK_AT]
    assert before == []
    after = [a for a in result["history"] if a["fired_at"] is not None and a["fired_at"] > BREAK_AT]
    unreachable = [a for a in after if a["alertname"] == "DownstreamDependencyUnavailable"
                   and a["labels"]["server_address"] == "ts-travel-service"]
    assert {a["labels"]["service_name"] for a in unreachable} >= {"ts-ui-dashboard", "ts-preserve-service"}
    assert all(a["fired_at"] <= BREAK_AT + WITHIN for a in unreachable)
    assert "FrontendAvailabilityLow" in {a["alertname"] for a in after}


def test_an_order_mongo_scaled_to_zero_is_down_and_fails_order_services_reads() -> None:
    result = run(5, background=False, end=BREAK_AT + WITHIN, broken="ts-order-mongo", break_at=BREAK_AT)
    assert result["errors"] == []
    fired = {(a["alertname"], a["labels"].get("deployment") or a["labels"].get("service_name")): a["fired_at"]
             for a in result["history"] if a["fired_at"] is not None}
    assert all(t > BREAK_AT for t in fired.values()), fired
    assert BREAK_AT < fired["MongoDBDown", "ts-order-mongo"] <= BREAK_AT + WITHIN
    assert BREAK_AT < fired["DatabaseClientErrorRatioHigh", "ts-order-service"] <= BREAK_AT + WITHIN


@pytest.mark.slow
def test_a_quiet_90_minutes_with_background_releases_raise_at_most_two_alerts() -> None:
    result = run(1)
    assert result["errors"] == []
    assert len([r for r in result["releases"] if r.get("origin") == "background"]) > 30
    fired = [(a["alertname"], a["labels"]) for a in result["history"] if a["fired_at"] is not None]
    assert len(fired) <= 2, fired


@pytest.mark.slow
@pytest.mark.skipif(promtool_path() is None, reason="promtool not installed (Debian package 'prometheus')")
def test_promtool_sees_the_same_alerts_on_a_twin_run(tmp_path: Path) -> None:
    """Real Prometheus (promtool test rules) on the series of a twin run where ts-order-mongo is
    scaled away and ts-travel-service scaled up (its new JVM pod is not ready for minutes, which
    the availability rules wait out): the same alerts at every evaluation."""
    from pytest_marathon.backends import create_backend

    backend = create_backend("trainticket", 5)
    backend.advance_to(BREAK_AT)
    backend.scale("ts-order-mongo", 0)
    backend.scale("ts-travel-service", 2)
    backend.advance_to(BREAK_AT + 2 * WITHIN)
    store = backend.store
    pack = load_rule_pack("trainticket")
    first = min(s.times[0] for s in store if len(s.times))
    last = max(s.times[-1] for s in store if len(s.times))
    test = build_unit_test(pack, store, rule_file="trainticket.rules.yaml", start=first - 5.0, end=last,
                           namespace="train-ticket", annotations=False)
    assert test.errors == []
    fired = {name for name, n in test.firing_counts.items() if n}
    assert {"MongoDBDown", "DatabaseClientErrorRatioHigh"} <= fired
    assert not fired & {"KubePodNotReady", "DeploymentReplicasUnavailable", "DeploymentNotAvailable"}
    ok, output = run_promtool(test, pack, tmp_path)
    assert ok, output[:4000]
