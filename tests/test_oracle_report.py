"""oracle_report's reading of a fault the oracle acted on in time and was still not credited.

The scorer judges each change on its own: issued while the fault was failing, then taken effect
before a sample that reads recovered. A bundle where one change was issued in time but was still
rolling out at the revert, beside a later change in scope that took effect, is a benchmark limit
(`remedy-completed-too-late`), not a disagreement with the scorer (a defect)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_marathon.agents.oracle_report import REASONS, explain

INJECT, REVERT = 1612.0, 1933.0
FAULT = {
    "fault_id": "f23", "catalog_id": "dep-image-tag-ts-user-service", "category": "deployment",
    "culprits": ["ts-user-service"], "artifact": "image:ts-user-service", "aliases": [],
    "scope": ["ts-user-service", "ts-contacts-service"], "inject_at": INJECT, "revert_at": REVERT,
    "remedy": [{"tool": "rollback_service", "args": {"service": "ts-user-service"}}],
}
ROW = {"fault_id": "f23", "catalog_id": FAULT["catalog_id"], "outcome": "acted-not-repaired",
       "correlated": True, "located": True, "repaired": False, "repair_counterfactual": None}


def _change(t: float, target: str, seq: int, invocation: int) -> dict[str, Any]:
    return {"t": t, "invocation": invocation, "seq": seq, "tool": "rollback_service",
            "targets": [target], "ok": True, "changed": True, "completed_at": None}


def _completed(t: float, seq: int, invocation: int) -> dict[str, Any]:
    return {"t": t + 5, "invocation": invocation, "seq": seq, "event": "completed", "completed_at": t}


def _bundle(root: Path, interventions: list[dict[str, Any]]) -> Path:
    """The oracle's own rollback at 1800 s (the artifact reads corrected from the next sample);
    the probe never fails, so the artifact decides."""
    probes = [{"t": t, "fault_id": "f23", "healthy": True, "artifact_corrected": t > 1800}
              for t in range(1620, int(REVERT), 15)]
    streams = {
        "schedule": [FAULT],
        "alerts": [{"t": 1650.0, "event": "firing", "alert_id": "a1", "fired_at": 1650.0,
                    "labels": {"namespace": "train-ticket", "deployment": "ts-user-service"}}],
        "invocations": [{"n": n, "t": 120.0 * n} for n in range(1, 17)],
        "interventions": interventions,
        "probes": probes,
    }
    for name, records in streams.items():
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return root


def _reason(root: Path, interventions: list[dict[str, Any]]) -> tuple[str, str]:
    (row,) = explain(_bundle(root, interventions), {"per_fault": [ROW]})
    assert REASONS[row["reason"]] == row["kind"]
    return row["reason"], row["kind"]


def test_an_in_time_change_still_rolling_out_beside_a_later_completed_one_is_too_late(tmp_path):
    changes = [_change(1800.0, "ts-user-service", 51, 15),
               _change(1920.0, "ts-contacts-service", 62, 16), _completed(1920.0, 62, 16)]
    assert _reason(tmp_path, changes) == ("remedy-completed-too-late", "benchmark-limit")


def test_the_same_change_issued_in_time_and_taking_effect_in_time_is_a_scorer_disagreement(tmp_path):
    changes = [_change(1800.0, "ts-user-service", 51, 15), _completed(1905.0, 51, 15)]
    assert _reason(tmp_path, changes) == ("scorer-disagreement", "defect")
