"""Parity with real Prometheus: promtool runs our rule pack on the same series and must see
exactly the alerts our engine has firing, at every evaluation (with their rendered annotations on
the synthetic cluster, whose values are exact).

Data: series recorded from twin runs (healthy and under faults) plus a synthetic exporter-shaped
cluster that drives the rules the twin's faults do not reach, so every rule fires somewhere.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from alert_synthetic import synthetic_store

from pytest_marathon.alerting.promtool import build_unit_test, run_promtool
from pytest_marathon.alerting.rules import load_rule_pack
from pytest_marathon.tsdb import SeriesStore

pytestmark = pytest.mark.skipif(
    shutil.which("promtool") is None,
    reason="promtool not installed (Debian package 'prometheus'; .ci/run installs it)",
)

RULE_FILE = "boutique.rules.yaml"
SEED = 11


def _chaos(kind: str, target: str, **params: object) -> Callable:
    def start(backend):  # noqa: ANN001 - the twin backend
        handle = backend.chaos_start(kind, target, **params)
        return lambda: backend.chaos_stop(handle)

    return start


def _scale_to_zero(deployment: str) -> Callable:
    def start(backend):  # noqa: ANN001
        backend.scale(deployment, 0)
        return lambda: backend.scale(deployment, 1)

    return start


def _bad_env(deployment: str, variable: str, value: str) -> Callable:
    def start(backend):  # noqa: ANN001
        good = backend.artifact_value(f"env:{deployment}/{variable}")
        backend.release(deployment, env={variable: value}, change_cause="parity fault")
        return lambda: backend.release(deployment, env={variable: good}, change_cause="parity revert")

    return start


#: (start, stop, fault) on one twin run: faults overlap so one promtool run covers them all.
FAULT_TIMELINE: tuple[tuple[float, float, Callable], ...] = (
    (120.0, 330.0, _chaos("datastore_outage", "redis-cart")),
    (120.0, 330.0, _chaos("cpu_hog", "cartservice")),
    (360.0, 570.0, _scale_to_zero("paymentservice")),
    (360.0, 570.0, _chaos("memory_hog", "recommendationservice", size="400Mi")),
    (360.0, 570.0, _bad_env("frontend", "AD_SERVICE_ADDR", "adservice:9556")),
)


def _twin_store(end: float = 780.0) -> SeriesStore:
    """One healthy warm-up, two waves of overlapping faults, and the recovery after them."""
    from pytest_marathon.backends import create_backend

    backend = create_backend("boutique", SEED)
    changes = sorted({t for start, stop, _ in FAULT_TIMELINE for t in (start, stop)})
    stops: dict[float, list[Callable]] = {}
    for t in changes:
        backend.advance_to(t)
        for undo in stops.pop(t, []):
            undo()
        for start, stop, fault in FAULT_TIMELINE:
            if start == t:
                stops.setdefault(stop, []).append(fault(backend))
    backend.advance_to(end)
    return backend.store


def _parity(store: SeriesStore, tmp_path: Path, *, annotations: bool = True) -> dict[str, int]:
    pack = load_rule_pack("boutique")
    first = min(s.times[0] for s in store if len(s.times))
    last = max(s.times[-1] for s in store if len(s.times))
    test = build_unit_test(pack, store, rule_file=RULE_FILE, start=first - 5.0, end=last,
                           annotations=annotations)
    assert test.errors == []
    ok, output = run_promtool(test, pack, tmp_path)
    assert ok, output[:4000]
    return test.firing_counts


def test_synthetic_cluster_fires_every_rule_and_promtool_agrees(tmp_path: Path) -> None:
    counts = _parity(synthetic_store(), tmp_path)
    silent = sorted(name for name, n in counts.items() if n == 0)
    assert silent == [], f"rules never firing in the synthetic cluster: {silent}"


def test_twin_run_under_faults_matches_promtool(tmp_path: Path) -> None:
    # Firing sets only: rendered values of long real runs depend on promtool's summation order.
    counts = _parity(_twin_store(), tmp_path, annotations=False)
    fired = sorted(name for name, n in counts.items() if n)
    assert len(fired) >= 20, f"the faulted twin run exercises too few rules: {fired}"
