"""Parity with real Prometheus: promtool runs our rule pack on the same series and must see
exactly the alerts (labels and rendered annotations) our engine has firing, at every evaluation.

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


def _twin_store(fault: Callable | None, minutes: float = 12.0) -> SeriesStore:
    from pytest_marathon.backends import create_backend

    backend = create_backend("boutique", SEED)
    backend.advance_to(180.0)
    handle = fault(backend) if fault is not None else None
    backend.advance_to(420.0)
    if handle is not None:
        handle()
    backend.advance_to(minutes * 60)
    return backend.store


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


TWIN_CASES: dict[str, Callable | None] = {
    "healthy": None,
    "redis-down": _chaos("datastore_outage", "redis-cart"),
    "payment-scaled-to-zero": _scale_to_zero("paymentservice"),
    "cart-cpu-hog": _chaos("cpu_hog", "cartservice"),
}


def _parity(store: SeriesStore, tmp_path: Path, end: float | None = None) -> dict[str, int]:
    pack = load_rule_pack("boutique")
    first = min(s.times[0] for s in store if len(s.times))
    last = max(s.times[-1] for s in store if len(s.times))
    test = build_unit_test(pack, store, rule_file=RULE_FILE, start=first - 5.0, end=end or last)
    assert test.errors == []
    ok, output = run_promtool(test, pack, tmp_path)
    assert ok, output[:4000]
    return test.firing_counts


def test_synthetic_cluster_fires_every_rule_and_promtool_agrees(tmp_path: Path) -> None:
    counts = _parity(synthetic_store(), tmp_path)
    silent = sorted(name for name, n in counts.items() if n == 0)
    assert silent == [], f"rules never firing in the synthetic cluster: {silent}"


@pytest.mark.parametrize("case", sorted(TWIN_CASES))
def test_twin_runs_match_promtool(case: str, tmp_path: Path) -> None:
    try:
        store = _twin_store(TWIN_CASES[case])
    except Exception as exc:  # the fault API or twin may reject a target while it evolves
        pytest.fail(f"twin run {case!r} failed: {exc}")
    _parity(store, tmp_path)
