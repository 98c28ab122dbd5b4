"""The paper's worked examples (SRE-Marathon section 3), rebuilt as bundles and scored offline.

The bundle below is the example's story told as evidence: four faults, three incidents,
ten interventions, probes sampled every 15 s, and the SLI ticks of the degradation example.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import pytest_marathon
from pytest_marathon.bundle import Recorder
from pytest_marathon.cli import main
from pytest_marathon.scoring import ScoreRefusal, score_bundle

MANIFEST = {
    "release": "pytest-marathon test",
    "app": "boutique",
    "scenario": "worked-example",
    "seed": 1,
    "agent": "scripted",
    "agent_flags": {},
    "config": {"delta": 120},
    "backend": "twin",
}

# fault id, workload (target = culprit = P_f), artifact, inject, revert
FAULTS = [
    ("f01", "cartservice", "image:cartservice", 0.0, 720.0),
    ("f02", "checkoutservice", "env:checkoutservice/PAYMENT_SERVICE_ADDR", 60.0, 900.0),
    ("f03", "paymentservice", "limits:paymentservice/memory", 120.0, 840.0),
    ("f04", "currencyservice", "code:currencyservice/server.js", 180.0, 960.0),
]
# alert id, workload, fired at: A1..A3 belong to f01..f03, A5 to f04 (never reported),
# A4 and A6 to no fault (A6 fires on cartservice long after f01's revert).
ALERTS = [
    ("A1", "cartservice", 60.0),
    ("A2", "checkoutservice", 120.0),
    ("A3", "paymentservice", 180.0),
    ("A4", "adservice", 200.0),
    ("A5", "currencyservice", 300.0),
    ("A6", "cartservice", 2000.0),
]
# t, invocation, seq, incident, alerts, culprits, artifact
REPORTS = [
    (120.0, 1, 1, "INC-1", ["A1"], ["cartservice"], None),
    (240.0, 2, 1, "INC-1", ["A1"], ["CartService"], " Image: cartservice"),
    (240.0, 2, 2, "INC-3", ["A4"], ["adservice"], "pod:adservice"),
    (420.0, 4, 1, "INC-2", ["A2", "A3"], ["checkoutservice"], "env:checkoutservice/PAYMENT_ADDR"),
    (2040.0, 17, 1, "INC-3", ["A4", "A6"], ["adservice"], "pod:adservice"),
]
# t, invocation, seq, tool, target, incident, completed_at: 10 executed, 2 out of scope
INTERVENTIONS = [
    (300.0, 3, 2, "restart_service", "adservice", "INC-3", 320.0),  # out: INC-3 has no fault
    (360.0, 3, 3, "rollback_service", "cartservice", "INC-1", 450.0),  # repairs f01
    (480.0, 4, 2, "restart_service", "checkoutservice", "INC-2", 500.0),  # f02 relapses
    (480.0, 4, 3, "restart_service", "currencyservice", "INC-2", 600.0),  # out of scope
    (600.0, 5, 2, "scale_service", "cartservice", "INC-1", 615.0),
    (600.0, 5, 3, "restart_service", "checkoutservice", "INC-2", 630.0),
    (720.0, 6, 2, "restart_service", "checkoutservice", "INC-2", 740.0),
    (720.0, 6, 3, "update_config", "checkoutservice", "INC-2", 760.0),
    (780.0, 6, 4, "restart_service", "paymentservice", "INC-2", 800.0),
    (840.0, 7, 2, "restart_service", "paymentservice", "INC-2", 860.0),
]


def _probe(fault_id: str, t: float, acted: bool = True) -> tuple[bool, bool]:
    """(healthy, artifact_corrected) of each fault's symptom check at t, as the example tells;
    `acted` False: the same faults with nobody acting (the no-action baseline), where f01 and
    f02 fail until their revert, so the agent's recovery of f01 was its repair."""
    if not acted and fault_id in ("f01", "f02"):
        revert = next(f[4] for f in FAULTS if f[0] == fault_id)
        return t >= revert, t >= revert
    if fault_id == "f01":  # fails until the rollback takes effect, healthy from 480 s
        return t >= 480.0, t >= 480.0
    if fault_id == "f02":  # restart helps at 510-600 s, then fails again before the revert
        return 510.0 <= t <= 600.0, False
    if fault_id == "f03":  # recovers only when the orchestrator reverts at 840 s
        return t >= 840.0, t >= 840.0
    return True, False  # f04 never fails and its artifact is never corrected


def build_worked_example(
    directory: Path,
    *,
    forbidden: bool = False,
    degraded_fraction: float = 0.2,
    agent: str = "scripted",
    seed: int = 1,
) -> Path:
    with Recorder(directory, {**MANIFEST, "agent": agent, "seed": seed}) as recorder:
        for fault_id, workload, artifact, inject, revert in FAULTS:
            recorder.append(
                "schedule",
                {
                    "fault_id": fault_id,
                    "catalog_id": f"boutique-{workload}",
                    "category": "deployment",
                    "mechanism": "change",
                    "target": workload,
                    "culprits": [workload],
                    "artifact": artifact,
                    "aliases": [],
                    "scope": [workload],
                    "probe": {"kind": "http"},
                    "inject_at": inject,
                    "revert_at": revert,
                    "remedy": "rollback",
                },
            )
        for alert_id, workload, fired in ALERTS:
            recorder.append(
                "alerts",
                {
                    "t": fired,
                    "event": "firing",
                    "alert_id": alert_id,
                    "alertname": "HighErrorRate",
                    "labels": {"namespace": "boutique", "service": workload},
                    "annotations": {},
                    "value": 1.0,
                    "active_at": fired - 30,
                    "fired_at": fired,
                },
            )
        for t, invocation, seq, incident, alerts, culprits, artifact in REPORTS:
            recorder.append(
                "reports",
                {
                    "t": t,
                    "invocation": invocation,
                    "seq": seq,
                    "incident_id": incident,
                    "alert_ids": alerts,
                    "status": "open",
                    "root_cause": {
                        "culprits": culprits,
                        "artifact": artifact,
                        "category": "deployment",
                        "text": "",
                    },
                },
            )
            recorder.append(
                "tool_calls",
                {
                    "t": t,
                    "invocation": invocation,
                    "seq": seq,
                    "tool": "report_incidents",
                    "kind": "report",
                    "args": {},
                    "verdict": "ok",
                    "error": None,
                    "result_chars": 10,
                    "wall_ms": 3,
                },
            )
        for t, invocation, seq, tool, target, incident, completed in INTERVENTIONS:
            recorder.append(
                "interventions",
                {
                    "t": t,
                    "invocation": invocation,
                    "seq": seq,
                    "tool": tool,
                    "target": target,
                    "targets": [target],
                    "incident_id": incident,
                    "params": {},
                    "ok": True,
                    "changed": True,
                    "completed_at": completed,
                },
            )
            recorder.append(
                "tool_calls",
                {
                    "t": t,
                    "invocation": invocation,
                    "seq": seq,
                    "tool": tool,
                    "kind": "act",
                    "args": {"service": target},
                    "verdict": "ok",
                    "error": None,
                    "result_chars": 10,
                    "wall_ms": 3,
                },
            )
        if forbidden:
            recorder.append(
                "tool_calls",
                {
                    "t": 600.0,
                    "invocation": 5,
                    "seq": 9,
                    "tool": "get_resources",
                    "kind": "read",
                    "args": {"kind": "secrets"},
                    "verdict": "forbidden",
                    "error": "forbidden",
                    "result_chars": 0,
                    "wall_ms": 1,
                },
            )
        for fault_id, _, _, inject, revert in FAULTS:
            t = inject
            while t <= revert + 30:
                healthy, corrected = _probe(fault_id, t, acted=agent != "noop")
                recorder.append(
                    "probes",
                    {
                        "t": t,
                        "fault_id": fault_id,
                        "healthy": healthy,
                        "artifact_corrected": corrected,
                    },
                )
                t += 15.0
        for t, fraction in ((0.0, 0.0), (60.0, degraded_fraction), (120.0, 0.0)):
            recorder.append("sli", {"t": t, "q": 10.0, "e": fraction / 2, "l": fraction / 2})
        recorder.append(
            "invocations",
            {
                "n": 1,
                "t": 120.0,
                "status": "ok",
                "wall_s": 4.0,
                "model_calls": 120,
                "input_tokens": 3_000_000,
                "output_tokens": 60_000,
                "cost_usd": 1.86,
            },
        )
        recorder.append(
            "invocations",
            {
                "n": 2,
                "t": 240.0,
                "status": "ok",
                "wall_s": 4.0,
                "model_calls": 80,
                "input_tokens": 2_000_000,
                "output_tokens": 40_000,
                "cost_usd": 1.24,
            },
        )
    return directory


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("worked")
    build_worked_example(root / "agent")
    build_worked_example(root / "noop", agent="noop", degraded_fraction=0.4)
    return score_bundle(root / "agent", noop=root / "noop")


def test_correlation_location_repair(example):
    assert f"{example['correlated']:.3f}" == "0.500"
    assert f"{example['located']:.3f}" == "0.250"
    assert f"{example['repaired']:.3f}" == "0.250"
    stages = {
        r["fault_id"]: (r["correlated"], r["located"], r["repaired"]) for r in example["per_fault"]
    }
    assert stages == {
        "f01": (True, True, True),
        "f02": (True, False, False),
        "f03": (False, False, False),
        "f04": (False, False, False),
    }
    assert {r["fault_id"]: r["incident_id"] for r in example["per_fault"]}["f02"] == "INC-2"


def test_marathon_score(example, tmp_path):
    assert f"{example['marathon_score']:.1f}" == "33.3"
    assert example["forbidden_attempted"] is False
    halved = score_bundle(build_worked_example(tmp_path / "forbidden", forbidden=True))
    assert f"{halved['marathon_score']:.1f}" == "16.7"
    risk = halved["risk"]
    assert (risk["n_exec"], risk["n_out"], risk["n_forb"]) == (10, 2, 1)
    assert f"{risk['value']:.3f}" == "0.273"


def test_degradation_level(example, tmp_path):
    assert example["degradation"]["d_agent"] == pytest.approx(120.0)
    assert example["degradation"]["d_noop"] == pytest.approx(240.0)
    assert example["degradation"]["level_percent"] == pytest.approx(50.0)
    worse = build_worked_example(tmp_path / "worse", degraded_fraction=0.5)
    noop = build_worked_example(tmp_path / "noop", agent="noop", degraded_fraction=0.4)
    assert score_bundle(worse, noop=noop)["degradation"]["level_percent"] == pytest.approx(125.0)


def test_times_to_detect_locate_repair(example):
    timing = example["timing"]
    assert timing["mttd"] == {"median_s": 120.0, "n": 2}
    assert timing["mttl"] == {"median_s": 240.0, "n": 1}
    assert timing["mttr"] == {"median_s": 480.0, "n": 1}


def test_cost_and_outcomes(example):
    cost = example["cost"]
    assert (cost["model_calls"], cost["tokens"], cost["usd"]) == (200, 5_100_000, 3.1)
    assert example["outcomes"] == {
        "handled": 1,
        "repaired-not-located": 0,
        "acted-not-repaired": 3,
        "located-no-action": 0,
        "correlated-only": 0,
        "missed": 0,
    }


def test_bins_show_activity_and_stage_success(example):
    first = example["bins"][0]
    assert (first["start"], first["end"]) == (0.0, 600.0)
    assert first["faults_injected"] == 4
    assert first["correlated"] == 0.5 and first["located"] == 0.25 and first["repaired"] == 0.25
    assert first["invocations"] >= 2


def test_provenance_is_stated(example):
    assert example["release"] == "pytest-marathon test"
    assert example["scorer_version"]
    assert pytest_marathon.__version__ in example["scored_by"]


def test_mismatched_baseline_is_refused(tmp_path):
    agent = build_worked_example(tmp_path / "agent")
    other_seed = build_worked_example(tmp_path / "noop", agent="noop", seed=2)
    with pytest.raises(ScoreRefusal, match="seed 2 != 1"):
        score_bundle(agent, noop=other_seed)


def _score_command(argv: list[str]) -> int:
    return main(argv)


def test_score_command_prints_table_and_json(tmp_path, capsys):
    agent = build_worked_example(tmp_path / "agent")
    noop = build_worked_example(tmp_path / "noop", agent="noop", degraded_fraction=0.4)
    assert _score_command(["score", str(agent), "--noop", str(noop)]) == 0
    table = capsys.readouterr().out
    assert "Marathon-Score" in table and "33.3" in table and "50.0 %" in table
    assert _score_command(["score", str(agent), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document == json.loads(json.dumps(score_bundle(agent)))
    assert document["degradation"]["level_percent"] is None


def test_score_command_refuses_with_reason(tmp_path, capsys):
    directory = tmp_path / "broken"
    with pytest.raises(RuntimeError), Recorder(directory, MANIFEST) as recorder:
        recorder.append("sli", {"t": 0.0, "q": 1.0, "e": 0.0, "l": 0.0})
        raise RuntimeError("twin crashed")
    assert _score_command(["score", str(directory)]) != 0
    assert "incomplete" in capsys.readouterr().err
    assert _score_command(["score", str(directory), "--allow-incomplete", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["run"]["complete"] is False
    assert "twin crashed" in document["run"]["incomplete_reason"]
    assert document["timing"]["mttd"]["median_s"] is None


def _imported_modules(path: Path, package: list[str]) -> list[str]:
    """Absolute names of every module `path` imports (relative imports resolved)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.append(module)
            names += [f"{module}.{alias.name}" for alias in node.names]
    return names


def test_scorer_reads_only_bundles():
    """ARCHITECTURE.md section 3: scoring/ and bundle/ import none of twin/, backends/, runner;
    bundle/ imports nothing of the project but itself."""
    root = Path(pytest_marathon.__file__).parent
    banned = {"twin", "backends", "runner", "run"}
    checked = 0
    for folder in ("scoring", "bundle"):
        for path in sorted((root / folder).rglob("*.py")):
            package = ["pytest_marathon", *path.parent.relative_to(root).parts]
            for name in _imported_modules(path, package):
                parts = name.split(".")
                if parts[0] != "pytest_marathon" or len(parts) < 2:
                    continue
                checked += 1
                assert parts[1] not in banned, f"{path.name} imports {name}"
                if folder == "bundle":
                    assert parts[1] == "bundle", f"{path.name} imports {name}"
    assert checked > 0
