"""Prometheus alert lifecycle of AlertEngine: pending, for, firing, resolved, keep_firing_for."""

from __future__ import annotations

from pytest_marathon.alerting.engine import AlertEngine
from pytest_marathon.alerting.rules import parse_rule_text
from pytest_marathon.tsdb import STALE_NAN, SeriesStore

RULES = """
groups:
  - name: g
    interval: 15s
    rules:
      - alert: High
        expr: level > 5
        for: 30s
        labels: {severity: warning}
        annotations:
          summary: "{{ $labels.svc }} at {{ $value }} ({{ $value | humanizePercentage }})"
      - alert: Sticky
        expr: level > 5
        keep_firing_for: 45s
"""


def _engine(levels: dict[float, float], svc: str = "cart") -> tuple[AlertEngine, list[dict]]:
    store = SeriesStore()
    pack = parse_rule_text(RULES, source="test.rules.yaml", app="test")
    engine = AlertEngine(pack, store, namespace="ns")
    events = []
    for t in sorted(levels):
        value = levels[t]
        store.append("level", {"svc": svc, "namespace": "ns"}, t, value)
        events.extend(engine.evaluate(t))
    return engine, events


def _times(events: list[dict], name: str, kind: str) -> list[float]:
    return [e["t"] for e in events if e["alertname"] == name and e["event"] == kind]


def test_for_holds_pending_then_fires_and_resolves_when_series_gone() -> None:
    levels = {15.0 * i: (9.0 if 2 <= i <= 8 else 1.0) for i in range(12)}
    engine, events = _engine(levels)
    # active from 30s; `for: 30s` -> firing at 60s; expression false from 135s -> resolved.
    assert _times(events, "High", "firing") == [60.0]
    assert _times(events, "High", "resolved") == [135.0]
    fired = next(e for e in events if e["alertname"] == "High" and e["event"] == "firing")
    assert fired["active_at"] == 30.0 and fired["fired_at"] == 60.0
    assert fired["labels"] == {
        "alertname": "High", "namespace": "ns", "severity": "warning", "svc": "cart"
    }
    assert fired["annotations"]["summary"] == "cart at 9 (900%)"
    [entry] = [h for h in engine.history() if h["alertname"] == "High"]
    assert entry["state"] == "resolved" and entry["resolved_at"] == 135.0
    assert entry["alert_id"] == fired["alert_id"]


def test_blip_shorter_than_for_never_fires() -> None:
    levels = {15.0 * i: (9.0 if i in (2, 3) else 1.0) for i in range(10)}
    _, events = _engine(levels)
    assert _times(events, "High", "firing") == []


def test_keep_firing_for_delays_resolution() -> None:
    levels = {15.0 * i: (9.0 if 2 <= i <= 4 else 1.0) for i in range(12)}
    _, events = _engine(levels)
    # no `for`: fires at 30s; absent from 75s; resolves once 45s have passed since then.
    assert _times(events, "Sticky", "firing") == [30.0]
    assert _times(events, "Sticky", "resolved") == [120.0]


def test_refiring_is_a_new_instance_and_ids_are_stable() -> None:
    levels = {15.0 * i: (9.0 if 2 <= i <= 6 or 12 <= i <= 16 else 1.0) for i in range(20)}
    engine, events = _engine(levels)
    ids = [e["alert_id"] for e in events if e["alertname"] == "High" and e["event"] == "firing"]
    assert len(ids) == 2 and ids[0] != ids[1]
    again, _ = _engine(levels)
    assert [h["alert_id"] for h in again.history()] == [h["alert_id"] for h in engine.history()]
    fired_at = [h["fired_at"] for h in engine.history()]
    assert fired_at == sorted(fired_at)
    assert all(i.startswith("a-") and len(i) == 12 for i in ids)


def test_stale_marker_resolves_immediately_and_other_namespaces_are_ignored() -> None:
    store = SeriesStore()
    pack = parse_rule_text(RULES, source="test.rules.yaml", app="test")
    engine = AlertEngine(pack, store, namespace="ns")
    events = []
    for i in range(8):
        t = 15.0 * i
        store.append("level", {"svc": "a", "namespace": "ns"}, t, 9.0 if i < 5 else STALE_NAN)
        store.append("level", {"svc": "b", "namespace": "other"}, t, 9.0)
        events.extend(engine.evaluate(t))
    assert {e["labels"]["namespace"] for e in events} == {"ns"}
    assert _times(events, "Sticky", "firing") == [0.0]
    assert _times(events, "High", "resolved") == [75.0]
    assert [h["labels"]["svc"] for h in engine.firing()] == ["a"]
