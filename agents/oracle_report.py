"""Why the oracle did not handle a fault end to end, from the run's recorded evidence.

The oracle has perfect knowledge, so every fault it fails to handle points either at a limit of
the benchmark (no alert before the fault was reverted, a repair window shorter than a rollout plus
one probe sample, a fault that recovered by itself before anyone could act, no recorded remedy, a
probe that another live fault keeps failing) or at a defect of the twin, the catalog or the oracle (a remedy that errors, a
rollout that never completes, a probe that stays unhealthy with nothing else wrong). This report
names which, per fault, from the bundle's JSONL streams and the scorer's per-fault rows. Every
reason is one code of `REASONS`, so a test (and a reader) can tell limits from defects.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_marathon.agents.oracle import (
    ATTRIBUTION_GRACE_S,
    attributable,
    incident_id_of,
    remedy_steps,
)

# `event` of an interventions.jsonl record saying when an earlier intervention took effect
# (the runner's completion record; docs/internals.md, "Bundle streams").
COMPLETED_EVENT = "completed"

LIMIT = "benchmark-limit"
DEFECT = "defect"

# Every reason `explain` may give, with what kind of cause it is. A `defect` row needs fixing
# in the twin, the catalog, the oracle or the scorer; a `benchmark-limit` row is the schedule's
# doing and no SRE, however ideal, could have handled that fault.
REASONS: dict[str, str] = {
    "no-attributable-alert": LIMIT,  # nothing in the fault's scope alerted inside its window
    "alert-after-revert": LIMIT,  # the first attributable alert fired after the revert
    "run-ended-before-invocation": LIMIT,  # no invocation saw the first attributable alert
    "no-invocation-before-revert": LIMIT,  # the alert was first seen at or after the revert
    "no-remedy": LIMIT,  # the catalog records `remedy: none`
    "remedy-completed-too-late": LIMIT,  # took effect with no probe sample left before the revert
    "recovered-before-remedy": LIMIT,  # the probe read healthy for good before the remedy was issued
    "heals-without-remedy": LIMIT,  # the no-action run had recovered by the repair time (scorer's counterfactual)
    "masked-by-overlapping-fault": LIMIT,  # the probe failed after the repair, as did live faults' probes
    "shadowed-by-overlapping-fault": LIMIT,  # the probe never failed: live faults on its path failed it first
    "not-correlated": DEFECT,  # alerts were seen, yet no incident matched the fault
    "not-located": DEFECT,  # the oracle's culprits/artifact do not match the record
    "remedy-not-applied": DEFECT,  # the oracle saw the fault in time and did not act
    "remedy-failed": DEFECT,  # a recorded remedy step was refused or errored
    "rollout-never-completed": DEFECT,  # the remedy executed but never took effect
    "probe-unhealthy-after-remedy": DEFECT,  # the probe failed after the repair, no other probe did
    "artifact-not-corrected": DEFECT,  # the probe never failed, and the remedy left the artifact wrong
    "scorer-disagreement": DEFECT,  # every piece of evidence says repaired
}


@dataclass(frozen=True)
class Evidence:
    """The bundle streams the reasons are read from."""

    schedule: dict[str, dict[str, Any]]
    alerts: list[dict[str, Any]]
    invocations: list[dict[str, Any]]
    interventions: list[dict[str, Any]]
    calls: list[dict[str, Any]]
    probes: list[dict[str, Any]]


def _stream(bundle: Path, name: str) -> list[dict[str, Any]]:
    path = bundle / f"{name}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _with_completions(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Executed interventions, each with the time it took effect (merging completion records,
    the earliest winning) — the same reading as the scorer's."""
    done: dict[tuple[int, int], float] = {}
    for r in records:
        if r.get("event") == COMPLETED_EVENT and r.get("completed_at") is not None:
            key = (int(r.get("invocation") or 0), int(r["seq"]))
            done[key] = min(float(r["completed_at"]), done.get(key, float("inf")))
    merged = []
    for r in records:
        if r.get("event") == COMPLETED_EVENT:
            continue
        completed = r.get("completed_at")
        if completed is None and r.get("seq") is not None:
            completed = done.get((int(r.get("invocation") or 0), int(r["seq"])))
        merged.append({**r, "completed_at": completed})
    return merged


def load(bundle: Path) -> Evidence:
    bundle = Path(bundle)
    return Evidence(
        schedule={f["fault_id"]: f for f in _stream(bundle, "schedule")},
        alerts=[
            {**a, "fired_at": a.get("fired_at", a.get("t"))}
            for a in _stream(bundle, "alerts")
            if a.get("event") == "firing"
        ],
        invocations=_stream(bundle, "invocations"),
        interventions=_with_completions(_stream(bundle, "interventions")),
        calls=_stream(bundle, "tool_calls"),
        probes=_stream(bundle, "probes"),
    )


def explain(bundle: Path, score: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per fault not handled end to end: `fault_id`, `catalog_id`, `outcome`, `reason`
    (a code of `REASONS`), `kind` (`benchmark-limit` or `defect`) and `detail` (the evidence)."""
    evidence = load(bundle)
    rows = []
    for row in score.get("per_fault", []):
        if row.get("outcome") == "handled":
            continue
        reason, detail = _reason(evidence.schedule[row["fault_id"]], row, evidence)
        rows.append(
            {
                "fault_id": row["fault_id"],
                "catalog_id": row.get("catalog_id"),
                "outcome": row.get("outcome"),
                "reason": reason,
                "kind": REASONS[reason],
                "detail": detail,
            }
        )
    return rows


def _reason(fault: Mapping[str, Any], row: Mapping[str, Any], ev: Evidence) -> tuple[str, str]:
    inject, revert = float(fault["inject_at"]), float(fault["revert_at"])
    fired = sorted(float(a["fired_at"]) for a in ev.alerts if attributable(fault, a))
    if not fired:
        return "no-attributable-alert", (
            f"nothing in scope {fault.get('scope')} fired within "
            f"[{inject:g}, {revert + ATTRIBUTION_GRACE_S:g}] s"
        )
    seen_at = min((float(i["t"]) for i in ev.invocations if float(i["t"]) >= fired[0]), default=None)
    if not row.get("correlated"):
        if seen_at is None:
            return "run-ended-before-invocation", f"first attributable alert at {fired[0]:g} s"
        if seen_at >= revert + ATTRIBUTION_GRACE_S:  # first seen after the fault's scoring horizon
            return "no-invocation-before-revert", (
                f"first alert at {fired[0]:g} s, next invocation at {seen_at:g} s, "
                f"after the horizon {revert + ATTRIBUTION_GRACE_S:g} s"
            )
        return "not-correlated", f"attributable alerts seen at {seen_at:g} s, no incident matched"
    if not row.get("located"):
        return "not-located", "the reported culprits/artifact differ from the schedule record"
    if not remedy_steps(fault):
        return "no-remedy", "the catalog records remedy: none; the fault lasts until its revert"
    if fired[0] >= revert:
        return "alert-after-revert", f"first attributable alert at {fired[0]:g} s, revert at {revert:g} s"
    if seen_at is None or seen_at >= revert:
        return "no-invocation-before-revert", (
            f"first alert at {fired[0]:g} s, next invocation at {seen_at} s, revert at {revert:g} s"
        )
    if row.get("repair_counterfactual") == "self-recovered":
        return "heals-without-remedy", (
            "the probe recovered after the remedy, but the no-action run of the same schedule had "
            "recovered by then too: self-recovery is never credited"
        )
    return _repair_reason(fault, ev, seen_at)


def _repair_reason(fault: Mapping[str, Any], ev: Evidence, seen_at: float) -> tuple[str, str]:
    """The fault was reported in time and has a remedy: why did it not count as repaired?

    As the scorer does, any state-changing intervention acting on a workload in the fault's scope
    counts (the oracle may have rolled a deployment back once for several faults, citing one of
    them); no-ops and changes elsewhere never do."""
    inject, revert = float(fault["inject_at"]), float(fault["revert_at"])
    scope = set(fault.get("scope") or ())
    done = [
        i
        for i in ev.interventions
        if i.get("ok")
        and i.get("changed")
        and scope & set(i.get("targets") or ())
        and inject <= float(i["t"]) < revert
    ]
    if not done:
        incident = incident_id_of(fault)
        failed = [
            c
            for c in ev.calls
            if c.get("kind") == "act"
            and (c.get("args") or {}).get("incident_id") == incident
            and c.get("verdict") != "ok"
        ]
        if failed:
            first = failed[0]
            return "remedy-failed", f"{first.get('tool')} at {first.get('t')} s: {first.get('verdict')}: {first.get('error')}"
        return "remedy-not-applied", f"alert seen at {seen_at:g} s, revert at {revert:g} s"
    completed = sorted(float(i["completed_at"]) for i in done if i.get("completed_at") is not None)
    if not completed:
        tools = ", ".join(f"{i.get('tool')}@{i.get('t')}" for i in done)
        return "rollout-never-completed", f"changes in scope ({tools}) never took effect"
    own = sorted(
        (p for p in ev.probes if p.get("fault_id") == fault["fault_id"] and inject <= float(p["t"]) < revert),
        key=lambda p: float(p["t"]),
    )
    in_time = [c for c in completed if any(c <= float(p["t"]) for p in own)]
    if not in_time:
        return "remedy-completed-too-late", (
            f"took effect at {completed[0]:g} s, revert at {revert:g} s: no probe sample between"
        )
    probe_failed = any(not p.get("healthy") for p in own)
    good_key = "healthy" if probe_failed else "artifact_corrected"
    issued = min(float(i["t"]) for i in done)
    bad = [float(p["t"]) for p in own if not p.get(good_key)]
    if bad and bad[-1] < issued:
        return "recovered-before-remedy", (
            f"the probe read {good_key.replace('_', ' ')} from {bad[-1]:g} s on, before the remedy "
            f"was issued at {issued:g} s: a fault that recovered by itself is never credited"
        )
    finish = in_time[0]
    after = [p for p in own if finish <= float(p["t"]) < revert]
    unhealthy = [float(p["t"]) for p in after if not p.get("healthy")]
    if unhealthy:
        last = unhealthy[-1]
        failing = sorted(
            str(p["fault_id"])
            for p in ev.probes
            if float(p["t"]) == last and p.get("fault_id") != fault["fault_id"] and not p.get("healthy")
        )
        if failing:
            return "masked-by-overlapping-fault", (
                f"remedy took effect at {finish:g} s; probe {fault.get('probe')} still failed at {last:g} s, "
                f"when the probes of live faults {', '.join(failing)} failed too"
            )
        return "probe-unhealthy-after-remedy", (
            f"remedy took effect at {finish:g} s; probe unhealthy at {last:g} s while no other fault's probe failed"
        )
    if not any(not p.get("healthy") for p in own):
        uncorrected = [float(p["t"]) for p in after if not p.get("artifact_corrected")]
        shadows = _shadowing_faults(fault, ev, own, finish)
        if uncorrected and shadows:
            return "shadowed-by-overlapping-fault", (
                f"probe never failed: until the remedy took effect at {finish:g} s, the probes of live "
                f"faults {', '.join(shadows)} on workloads in its path failed at every sample, so its "
                "request stopped before reaching the fault"
            )
        if uncorrected:
            return "artifact-not-corrected", (
                f"probe never failed; {fault.get('artifact')} still uncorrected at {uncorrected[-1]:g} s "
                f"after the remedy took effect at {finish:g} s"
            )
    repairs = [i for i in done if i.get("completed_at") is not None
               and (not bad or float(i["t"]) <= bad[-1]) and float(i["completed_at"]) <= float(own[-1]["t"])]
    if not repairs:
        # one change was issued in time and another took effect in time, but no single change did
        # both (a rollback still rolling out at the revert beside a later change in scope)
        return "remedy-completed-too-late", (
            f"no change in scope issued while the fault was failing took effect before the revert "
            f"at {revert:g} s (the one taking effect at {finish:g} s came after it recovered)"
        )
    return "scorer-disagreement", f"remedy took effect at {finish:g} s and probes stayed healthy"


def _shadowing_faults(
    fault: Mapping[str, Any], ev: Evidence, own: Sequence[Mapping[str, Any]], until: float
) -> list[str]:
    """Live faults whose culprits lie in this fault's scope and whose probes failed at every one
    of this fault's samples before `until`: a probe fails only on its fault's own evidence, so
    one whose request dies earlier on another fault (no endpoint, a timeout upstream) reads
    healthy. Empty when any sample had no such company."""
    scope = set(fault.get("scope") or ())
    failing_at: dict[float, set[str]] = {}
    for p in ev.probes:
        other = ev.schedule.get(str(p.get("fault_id")))
        if other is None or other["fault_id"] == fault["fault_id"] or p.get("healthy"):
            continue
        if scope & set(other.get("culprits") or ()):
            failing_at.setdefault(float(p["t"]), set()).add(other["fault_id"])
    times = [float(p["t"]) for p in own if float(p["t"]) < until]
    if not times or not all(failing_at.get(t) for t in times):
        return []
    return sorted(set().union(*(failing_at[t] for t in times)))

