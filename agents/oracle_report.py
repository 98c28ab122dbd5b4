"""Why the oracle did not handle a fault end to end, from the run's recorded evidence.

The oracle has perfect knowledge, so every fault it fails to handle points at a limit of the
benchmark (no alert before the fault was reverted, a repair window shorter than a rollout plus the
60 s of healthy probes the scorer demands, no recorded remedy) or at a defect of the twin or the
catalog (a remedy that completed but did not heal the probe). This report names which, per fault,
reading the bundle's JSONL streams and the scorer's per-fault rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_marathon.agents.oracle import (
    ATTRIBUTION_GRACE_S,
    attributable,
    incident_id_of,
    remedy_steps,
)

HEALTHY_HOLD_S = 60.0


def _stream(bundle: Path, name: str) -> list[dict[str, Any]]:
    path = bundle / f"{name}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _first_invocation_after(invocations: list[dict[str, Any]], t: float) -> float | None:
    times = sorted(float(i["t"]) for i in invocations if float(i["t"]) >= t)
    return times[0] if times else None


def explain(bundle: Path, score: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per fault not handled end to end: fault id, catalog id, outcome and reason."""
    bundle = Path(bundle)
    schedule = {f["fault_id"]: f for f in _stream(bundle, "schedule")}
    alerts = [
        {**a, "fired_at": a.get("fired_at", a.get("t"))}
        for a in _stream(bundle, "alerts")
        if a.get("event") == "firing"
    ]
    invocations = _stream(bundle, "invocations")
    interventions = _stream(bundle, "interventions")
    calls = _stream(bundle, "tool_calls")
    probes = _stream(bundle, "probes")
    rows = []
    for row in score.get("per_fault", []):
        if row.get("outcome") == "handled":
            continue
        fault = schedule[row["fault_id"]]
        rows.append(
            {
                "fault_id": row["fault_id"],
                "catalog_id": row.get("catalog_id"),
                "outcome": row.get("outcome"),
                "reason": _reason(fault, row, alerts, invocations, interventions, calls, probes),
            }
        )
    return rows


def _reason(
    fault: Mapping[str, Any],
    row: Mapping[str, Any],
    alerts: list[dict[str, Any]],
    invocations: list[dict[str, Any]],
    interventions: list[dict[str, Any]],
    calls: list[dict[str, Any]],
    probes: list[dict[str, Any]],
) -> str:
    inject, revert = float(fault["inject_at"]), float(fault["revert_at"])
    fired = sorted(float(a["fired_at"]) for a in alerts if attributable(fault, a))
    if not fired:
        return (
            f"no attributable alert: nothing in scope {fault.get('scope')} fired within "
            f"[{inject:g}, {revert + ATTRIBUTION_GRACE_S:g}] s"
        )
    seen_at = _first_invocation_after(invocations, fired[0])
    if not row.get("correlated"):
        return f"first attributable alert at {fired[0]:g} s but no invocation saw it before the run ended"
    if not row.get("located"):
        return "correlated but not located: the reported culprits/artifact differ from the record (scorer alias bug?)"
    if not remedy_steps(fault):
        return "no remedy recorded for this fault (remedy: none)"
    if fired[0] >= revert:
        return f"no alert before revert: first attributable alert at {fired[0]:g} s, revert at {revert:g} s"
    if seen_at is None or seen_at >= revert:
        return f"repair window too short: first alert at {fired[0]:g} s, next invocation at {seen_at} s, revert at {revert:g} s"
    incident = incident_id_of(fault)
    failed = [
        c for c in calls if (c.get("args") or {}).get("incident_id") == incident and c.get("verdict") != "ok"
    ]
    done = [i for i in interventions if i.get("incident_id") == incident and i.get("ok")]
    if not done:
        if failed:
            first = failed[0]
            return f"remedy step {first.get('tool')} failed ({first.get('verdict')}): {first.get('error')}"
        return f"remedy was not applied (alert seen at {seen_at:g} s, revert at {revert:g} s)"
    completed = [float(i["completed_at"]) for i in done if i.get("completed_at") is not None]
    if not completed:
        return f"remedy issued at {done[0].get('t')} s but the rollout never completed before revert at {revert:g} s"
    finish = max(completed)
    if finish >= revert:
        return f"repair window too short: remedy completed at {finish:g} s, after revert at {revert:g} s"
    if revert - finish < HEALTHY_HOLD_S:
        return (
            f"repair window too short: remedy completed at {finish:g} s, {revert - finish:g} s before "
            f"revert; {HEALTHY_HOLD_S:g} s of healthy probes are needed"
        )
    samples = [p for p in probes if p.get("fault_id") == fault["fault_id"] and finish <= float(p["t"]) < revert]
    unhealthy = [float(p["t"]) for p in samples if not p.get("healthy")]
    if unhealthy:
        return (
            f"remedy completed at {finish:g} s but the probe was still unhealthy at {unhealthy[-1]:g} s "
            "(masked by an overlapping fault, or a twin/catalog defect)"
        )
    return "remedy completed and probes healthy, yet not credited (scorer disagreement to investigate)"
