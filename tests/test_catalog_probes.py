"""A catalog entry's probe reads its own fault's symptom for as long as the fault lasts.

A pod-wide network delay (Chaos Mesh NetworkChaos netem on the pod's interface) slows pages only
until the kubelet's probes, which cross the same interface, time out (`timeoutSeconds` 1 s); from
then on readiness keeps the pod out of its Service and liveness restarts it (CrashLoopBackOff)
until the delay stops. A probe that looked for the slow hop read healthy for most of the fault,
so a repaired fault on the same workload looked unrepaired next to it (the oracle report's
`probe-unhealthy-after-remedy`) and the scorer could credit a repair of a fault no action fixes.
"""

from __future__ import annotations

import pytest

from pytest_marathon.backends import create_backend
from pytest_marathon.faults.admission import _one_fault_schedule
from pytest_marathon.faults.catalog import load_catalog
from pytest_marathon.faults.orchestrator import Orchestrator
from pytest_marathon.faults.schedule import ScheduledFault

ENTRIES = {e.id: e for e in load_catalog("boutique").entries}
POD_WIDE_DELAYS = sorted(i for i in ENTRIES if i.startswith("dep-slow-"))
WARMUP, RUN_FOR, STEP = 120.0, 180.0, 15.0
# the first probe timeouts: liveness/readiness fail after failureThreshold x periodSeconds
SETTLED = 45.0


def probe_while_live(entry_id: str) -> list[tuple[float, bool]]:
    """(seconds after injection, probe healthy) every 15 s while the fault is injected."""
    entry = ENTRIES[entry_id]
    backend = create_backend("boutique", 3)
    inject = backend.now + WARMUP
    fault = ScheduledFault("f01", entry, inject, inject + RUN_FOR)
    orchestrator = Orchestrator(backend, _one_fault_schedule("boutique", (fault,)))
    samples = []
    t = backend.now
    try:
        while t + STEP < inject + RUN_FOR:
            t += STEP
            orchestrator.step(t)
            backend.advance_to(t)
            if t >= inject:
                samples.append((t - inject, backend.probe(entry.probe)))
    finally:
        orchestrator.finish()
    return samples


def test_every_pod_wide_delay_is_in_the_catalog() -> None:
    assert len(POD_WIDE_DELAYS) >= 5


@pytest.mark.parametrize("entry_id", POD_WIDE_DELAYS)
def test_a_pod_wide_delay_reads_unhealthy_for_as_long_as_it_lasts(entry_id: str) -> None:
    samples = probe_while_live(entry_id)
    assert [t for t, healthy in samples if t >= SETTLED and healthy] == []
