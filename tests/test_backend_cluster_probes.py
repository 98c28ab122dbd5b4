"""On a cluster the Kubernetes backend answers `deployment_ready` and `no_error_logs` probes from
the API (backends/kubernetes_probes.py), and must answer as the twin's own probe does.

The twin runs behind its Kubernetes API and the backend reads it as a cluster's (a kubeconfig, no
operator token). Every catalog entry with such a probe is injected in turn; the two answers are
compared before, while the fault is live (when the rollout stalls or crash-loops) and after.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.apiserver.kubeconfig import write_kubeconfig
from pytest_marathon.apiserver.server import KubeApiServer
from pytest_marathon.backends import create_backend
from pytest_marathon.faults.backend_support import API_PROBE_KINDS, SYMPTOM_PROBES, needs
from pytest_marathon.faults.catalog import load_catalog
from pytest_marathon.faults.orchestrator import Orchestrator
from pytest_marathon.faults.scenario import Scenario
from pytest_marathon.faults.schedule import Schedule, ScheduledFault

pytest.importorskip("kubernetes", reason="the kubernetes client is not installed (the `test` extra)")

CATALOG = load_catalog("boutique")
def _one_of_each_kind() -> list[Any]:
    """One entry per (category, artifact kind, probe kind) among those a cluster probes."""
    chosen: dict[tuple[str, str, str], Any] = {}
    for entry in CATALOG:
        if entry.probe["kind"] in API_PROBE_KINDS and not needs(entry):
            chosen.setdefault((entry.category, entry.artifact.split(":")[0], entry.probe["kind"]), entry)
    return list(chosen.values())


PROBED = _one_of_each_kind()


def test_only_synthetic_request_probes_need_the_twin() -> None:
    for entry in CATALOG:
        assert (SYMPTOM_PROBES in needs(entry)) == (entry.probe["kind"] not in API_PROBE_KINDS), entry.id


@pytest.mark.parametrize("entry", PROBED, ids=[e.id for e in PROBED])
def test_the_api_probe_answers_as_the_twins_probe_through_a_fault(entry: Any, tmp_path: Path) -> None:
    twin = create_backend("boutique", 2)
    server = KubeApiServer(twin)
    try:
        path = write_kubeconfig(tmp_path / "kubeconfig.yaml", server.url, twin.namespace)
        cluster = create_backend("boutique", 2, backend="kubernetes", kubeconfig=str(path),
                                 prometheus_url="http://127.0.0.1:9")
        scenario = Scenario("probe check", "", 0.0, 400.0, 0.0, 1, 1.0, 1.0, 1.0, 1.0, 1)
        schedule = Schedule("boutique", scenario, 2, (ScheduledFault("f01", entry, 60.0, 400.0),))
        orchestrator = Orchestrator(twin, schedule)
        answers = []
        for t in range(15, 700, 15):
            orchestrator.step(float(t))
            twin.advance_to(float(t))
            answers.append((t, twin.probe(entry.probe)))
            assert cluster.probe(entry.probe) == answers[-1][1], (t, entry.id)
        assert any(not ok for _, ok in answers), "the fault should show in its probe"
    finally:
        server.close()
