"""A repair is credited once the change took effect: the runner's completion records on the twin.

One real short marathon (the twin, the orchestrator, the tools) with a scripted agent that
reports the first change-driven fault and rolls its workload back; the rollout is still in
progress when the tool answers, so only the runner's later completion record can earn the repair.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from bundle_rewrite import rerecord
from filelock import FileLock

from pytest_marathon.bundle import read_bundle
from pytest_marathon.config import RunConfig
from pytest_marathon.runner import record_marathon
from pytest_marathon.scoring import score_bundle
from pytest_marathon.scoring.attribution import workload_of

INCIDENT = "INC-1"


class RollbackFirstChange:
    """Told the schedule (ground truth), it reports the first change-driven fault with the alerts
    of its scope and rolls the faulted deployment back once."""

    name = "rollback-first-change"
    description = "reports and rolls back the first change-driven fault"
    needs_ground_truth = True

    def __init__(self) -> None:
        self.rolled_back = False

    def invoke(self, ctx: Any) -> None:
        changes = [f for f in ctx.ground_truth or () if f["mechanism"] == "change"]
        if not changes:
            return
        fault = changes[0]
        alert_ids = sorted(
            alert.get("alert_id") or alert["id"]
            for alert in ctx.alerts
            if workload_of(alert["labels"]) in fault["scope"]
            and alert["fired_at"] >= fault["inject_at"]
        )
        root_cause = {
            "culprits": fault["culprits"],
            "artifact": fault["artifact"],
            "category": fault["category"],
            "text": "scripted",
        }
        report = ctx.tools.call(
            "report_incidents",
            incidents=[{"incident_id": INCIDENT, "alert_ids": alert_ids, "status": "open",
                        "root_cause": root_cause}],
        )
        assert "error" not in report, report
        if not self.rolled_back:
            self.rolled_back = True
            ctx.tools.call("rollback_service", incident_id=INCIDENT, service=fault["target"])


def _stream(bundle: Path, name: str) -> list[dict[str, Any]]:
    return read_bundle(bundle).stream(name)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scripted run, recorded once for the module even when xdist spreads its tests over
    workers (they share the parent of their base temp dirs; a file lock elects one to record)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    config = RunConfig(app="boutique", agent="rollback-first-change", seed=1, scenario="short-5",
                       out_dir=root / "repairs")
    with FileLock(str(root / "repairs.lock")):
        if not (config.bundle_dir / "manifest.json").is_file() or not read_bundle(
            config.bundle_dir, allow_incomplete=True
        ).sealed:
            record_marathon(config, agent=RollbackFirstChange())
    return config.bundle_dir


def _rollback(bundle: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The agent's rollback and the change-driven fault it was aimed at."""
    [rollback] = [r for r in _stream(bundle, "interventions") if r.get("tool") == "rollback_service"]
    fault = next(f for f in _stream(bundle, "schedule")
                 if f["mechanism"] == "change" and f["target"] == rollback["target"])
    return rollback, fault


def test_a_rollback_of_a_change_driven_fault_is_credited_as_repaired(bundle: Path) -> None:
    rollback, fault = _rollback(bundle)
    assert rollback["ok"] and rollback["incident_id"] == INCIDENT
    report = score_bundle(bundle)
    row = next(r for r in report["per_fault"] if r["fault_id"] == fault["fault_id"])
    assert row["repaired"] is True
    assert 0 < row["time_to_repair_s"] < row["revert_at"] - row["inject_at"]
    assert report["repaired"] > 0


def test_the_completion_record_follows_its_rollout_and_names_its_intervention(
    bundle: Path,
) -> None:
    records = _stream(bundle, "interventions")
    completions = [r for r in records if r.get("event") == "completed"]
    rollback, _ = _rollback(bundle)
    assert rollback["completed_at"] is None, "the twin finishes a rollout in later ticks"
    [done] = [c for c in completions if (c["invocation"], c["seq"]) == (rollback["invocation"],
                                                                         rollback["seq"])]
    assert rollback["t"] < done["completed_at"] <= done["t"]
    assert done["t"] - rollback["t"] <= 120, "a one-replica rollback settles within a minute or two"
    assert len(completions) == len({(c["invocation"], c["seq"]) for c in completions})
    keys = [(r["t"], r["invocation"], r["seq"]) for r in records]
    assert keys == sorted(keys), "interventions.jsonl stays in (t, invocation, seq) order"


def _rerecord(source: Path, target: Path, keep: Any) -> Path:
    """A new sealed bundle holding source's records for which keep(stream, record) is true."""
    return rerecord(source, target, lambda stream, record: record if keep(stream, record) else None)


def test_the_scorer_credits_the_repair_only_through_the_completion_record(
    bundle: Path, tmp_path: Path
) -> None:
    _, fault = _rollback(bundle)
    with_completion = score_bundle(bundle)
    without = score_bundle(_rerecord(
        bundle, tmp_path / "stripped",
        lambda stream, r: not (stream == "interventions" and r.get("event") == "completed"),
    ))

    def repaired(report: dict[str, Any]) -> bool:
        return next(r for r in report["per_fault"] if r["fault_id"] == fault["fault_id"])["repaired"]

    assert repaired(with_completion) and not repaired(without)
    executed = sum(1 for r in _stream(bundle, "interventions") if r.get("event") != "completed")
    assert with_completion["risk"]["n_exec"] == without["risk"]["n_exec"] == executed
