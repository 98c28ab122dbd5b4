"""Run the twin with one admitted catalog fault and the shipped rule pack: which rules fire.

Shared by the rule-coverage test; the fault is injected by the orchestrator exactly as in a
marathon (and in admission), the pack is evaluated every 15 s as Prometheus would.
"""

from __future__ import annotations

from pytest_marathon.alerting.engine import AlertEngine
from pytest_marathon.alerting.rules import load_rule_pack
from pytest_marathon.backends import create_backend
from pytest_marathon.faults.admission import _one_fault_schedule
from pytest_marathon.faults.catalog import load_catalog
from pytest_marathon.faults.orchestrator import Orchestrator
from pytest_marathon.faults.schedule import ScheduledFault

INTERVAL = 15.0
WARMUP = 120.0


def rules_fired(entry_id: str, *, run_for: float, wanted: frozenset[str] = frozenset(), seed: int = 1) -> dict[str, float]:
    """Rule name -> seconds after injection it first fired; stops early once `wanted` all fired."""
    entry = next(e for e in load_catalog("boutique").entries if e.id == entry_id)
    backend = create_backend("boutique", seed)
    inject = backend.now + WARMUP
    fault = ScheduledFault("f01", entry, inject, inject + run_for + 60.0)
    orchestrator = Orchestrator(backend, _one_fault_schedule("boutique", (fault,)))
    engine = AlertEngine(load_rule_pack("boutique"), backend.store, backend.namespace, INTERVAL)
    fired: dict[str, float] = {}
    t = backend.now
    try:
        while t < inject + run_for:
            t += INTERVAL
            orchestrator.step(t)
            backend.advance_to(t)
            for event in engine.evaluate(t):
                if event.get("event") == "firing" and t >= inject:
                    fired.setdefault(event["alertname"], t - inject)
            if wanted and wanted <= set(fired):
                break
    finally:
        orchestrator.finish()
    return fired
