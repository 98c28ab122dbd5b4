"""The bundle's streams as typed, canonically ordered evidence.

Every metric reads from here, so the order of lines inside a stream and the labels an agent
gave its incidents can never leak into a result: records are sorted by their recorded keys
(time, invocation, sequence, then canonical text) before anything is computed.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..bundle import Bundle
from .attribution import artifact_forms, normalise_artifact, normalise_culprits, workload_of

#: An alert first fired up to this long after its fault's revert still belongs to the fault
#: (telemetry and rule `for:` windows lag the revert). The same span after the revert is the
#: fault's evidence horizon: incidents are judged as they stood then, never in hindsight.
ATTRIBUTION_GRACE_S = 60.0

#: `event` of an `interventions.jsonl` record saying when an earlier intervention took effect.
COMPLETED_EVENT = "completed"


class ScoreRefusal(Exception):
    """The bundle(s) cannot be scored as asked; the message says why."""


def _canonical(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), default=str)


def _num(value: Any, default: float = 0.0) -> float:
    return default if value is None else float(value)


@dataclass(frozen=True)
class Fault:
    fault_id: str
    catalog_id: str
    category: str
    culprits: frozenset[str]
    artifacts: frozenset[str]
    scope: frozenset[str]
    inject_at: float
    revert_at: float
    reverted: bool
    rank: int  # position in injection order (inject_at, fault_id)
    horizon: float  # h_f: revert + 60 s (run end if never reverted); later reports never count


@dataclass(frozen=True)
class Alert:
    alert_id: str
    first_fired: float
    workload: str | None
    in_namespace: bool


@dataclass(frozen=True)
class Report:
    key: tuple[float, int, float, str]
    t: float
    incident_id: str
    alert_ids: frozenset[str]
    culprits: frozenset[str]
    artifact: str | None
    item: int  # position of the incident in its `report_incidents` call

    @property
    def position(self) -> tuple[float, int, float, int]:
        """Where the record stands in the agent's work (time, invocation, call, item in the
        call), with nothing the agent names: the tie-break that comes before incident ids."""
        return (*self.key[:3], self.item)


@dataclass(frozen=True)
class Intervention:
    key: tuple[float, int, float, str]
    t: float
    targets: frozenset[str]  # the workloads the change acts on (a flag: the services reading it)
    incident_id: str | None
    ok: bool
    changed: bool  # False: a no-op (the value it already had), listed but never counted
    completed_at: float | None


def touches(intervention: Intervention, scope: frozenset[str]) -> bool:
    """Whether a state-changing intervention acts on a workload in `scope`. A no-op touches
    nothing, and a change has only the targets it names: no change is app-wide."""
    return intervention.changed and not intervention.targets.isdisjoint(scope)


@dataclass(frozen=True)
class ProbeSample:
    t: float
    healthy: bool
    artifact_corrected: bool


@dataclass
class Evidence:
    manifest: dict[str, Any]
    faults: list[Fault]
    alerts: dict[str, Alert]
    reports: list[Report]
    interventions: list[Intervention]
    tool_calls: list[dict[str, Any]]
    probes: dict[str, list[ProbeSample]]
    sli: list[tuple[float, float, float, float]]
    invocations: list[dict[str, Any]]
    run_end: float
    attributable: dict[str, frozenset[str]] = field(default_factory=dict)
    # alert id -> the faults it is attributable to, in injection order (the inverse of the above)
    faults_of_alert: dict[str, list[Fault]] = field(default_factory=dict)

    def faults_of_alerts(self, alert_ids: frozenset[str]) -> list[Fault]:
        """Faults with at least one attributable alert among `alert_ids`, in injection order."""
        found = {f.fault_id: f for a in alert_ids for f in self.faults_of_alert.get(a, ())}
        return sorted(found.values(), key=lambda f: f.rank)


def _order_key(record: dict[str, Any]) -> tuple[float, int, float, str]:
    """Recorded order: time, invocation, tool-call sequence; canonical text breaks exact ties so
    line order inside a stream never matters."""
    seq = record.get("seq")
    return (
        _num(record.get("t")),
        int(record.get("invocation") or 0),
        -1.0 if seq is None else float(seq),
        _canonical(record),
    )


def recorded_run_end(bundle: Bundle) -> float:
    """The last virtual time any stream recorded: the run's end, or where a killed run stopped."""
    times = [
        _num(r.get("t"))
        for name in ("sli", "probes", "alerts", "reports", "tool_calls", "invocations")
        for r in bundle.stream(name)
    ]
    return max(times, default=0.0)


def load_evidence(bundle: Bundle, schedule: list[dict[str, Any]] | None = None) -> Evidence:
    """The bundle's evidence; `schedule` replaces its schedule stream (a killed run's, redrawn
    by `scoring.recovery`)."""
    manifest = bundle.manifest
    run_end = recorded_run_end(bundle)
    faults = _faults(bundle.stream("schedule") if schedule is None else schedule, run_end)
    alerts = _alerts(bundle.stream("alerts"), run_namespace(manifest))
    reports = sorted(
        (_report(r) for r in bundle.stream("reports")),
        key=lambda r: r.key,
    )
    interventions = _interventions(bundle.stream("interventions"))
    tool_calls = sorted(bundle.stream("tool_calls"), key=_order_key)
    probes: dict[str, list[ProbeSample]] = defaultdict(list)
    for r in bundle.stream("probes"):
        probes[str(r.get("fault_id"))].append(
            ProbeSample(_num(r.get("t")), bool(r.get("healthy")), bool(r.get("artifact_corrected")))
        )
    for samples in probes.values():
        samples.sort(key=lambda s: (s.t, s.healthy, s.artifact_corrected))
    sli = sorted(
        (_num(r.get("t")), _num(r.get("q")), _num(r.get("e")), _num(r.get("l")))
        for r in bundle.stream("sli")
    )
    invocations = sorted(
        bundle.stream("invocations"), key=lambda r: (int(r.get("n") or 0), _canonical(r))
    )
    evidence = Evidence(
        manifest=manifest,
        faults=faults,
        alerts=alerts,
        reports=reports,
        interventions=interventions,
        tool_calls=tool_calls,
        probes=dict(probes),
        sli=sli,
        invocations=invocations,
        run_end=run_end,
    )
    evidence.attributable = _attribution(faults, alerts)
    for fault in faults:
        for alert_id in sorted(evidence.attributable[fault.fault_id]):
            evidence.faults_of_alert.setdefault(alert_id, []).append(fault)
    return evidence


def run_namespace(manifest: dict[str, Any]) -> str:
    """The namespace the app ran in, as the runner recorded it: only its alerts can be a fault's
    (Train Ticket runs in `train-ticket`). A bundle written before the manifest carried it ran an
    app whose namespace is its name (boutique, astronomy): the scorer reads bundles only."""
    return str(manifest.get("namespace") or manifest["app"])


def _interventions(records: list[dict[str, Any]]) -> list[Intervention]:
    """Executed interventions, each with the time it took effect.

    A change still rolling out when executed is recorded with `completed_at` null; the runner
    appends a completion record (`event: completed`, same `invocation` and `seq`) once it took
    effect. Completion records are merged into their intervention, never counted as one; the
    earliest completion wins should a bundle hold several."""
    completions: dict[tuple[int, int], float] = {}
    executed = []
    for r in records:
        if r.get("event") == COMPLETED_EVENT:
            if r.get("seq") is None or r.get("completed_at") is None:
                continue
            ref = (int(r.get("invocation") or 0), int(r["seq"]))
            done = float(r["completed_at"])
            completions[ref] = min(done, completions.get(ref, done))
        else:
            executed.append(r)
    interventions = []
    for r in executed:
        completed = r.get("completed_at")
        if completed is None and r.get("seq") is not None:
            completed = completions.get((int(r.get("invocation") or 0), int(r["seq"])))
        if not isinstance(r.get("changed"), bool):
            raise ScoreRefusal(
                f"an interventions record (invocation {r.get('invocation')}, seq {r.get('seq')}) "
                "has no boolean `changed`; it was not written by this bundle schema's interface"
            )
        interventions.append(
            Intervention(
                key=_order_key(r),
                t=_num(r.get("t")),
                targets=_targets(r),
                incident_id=None if r.get("incident_id") is None else str(r["incident_id"]),
                ok=bool(r.get("ok")),
                changed=r["changed"],
                completed_at=None if completed is None else float(completed),
            )
        )
    return sorted(interventions, key=lambda i: i.key)


def _targets(record: dict[str, Any]) -> frozenset[str]:
    """The workloads an intervention acts on: its `targets` list, else its single `target`."""
    targets = record.get("targets")
    if targets is None:
        targets = [] if record.get("target") is None else [record["target"]]
    if not isinstance(targets, list):
        raise ScoreRefusal(f"interventions record `targets` must be a list, got {targets!r}")
    return frozenset(str(t).strip().lower() for t in targets if str(t).strip())


def _faults(records: list[dict[str, Any]], run_end: float) -> list[Fault]:
    seen: set[str] = set()
    parsed = []
    for r in records:
        fault_id = str(r.get("fault_id"))
        if fault_id in seen:
            raise ScoreRefusal(f"schedule lists fault {fault_id} twice")
        seen.add(fault_id)
        inject = r.get("inject_at")
        if inject is None or not math.isfinite(float(inject)):
            raise ScoreRefusal(f"schedule record of {fault_id} has no inject_at")
        reverted = r.get("revert_at") is not None
        parsed.append((float(inject), fault_id, r, reverted))
    parsed.sort(key=lambda p: (p[0], p[1]))
    return [
        Fault(
            fault_id=fault_id,
            catalog_id=str(r.get("catalog_id", "")),
            category=str(r.get("category", "")),
            culprits=normalise_culprits(r.get("culprits", [])),
            artifacts=artifact_forms(r.get("artifact"), r.get("aliases") or ()),
            scope=normalise_culprits(r.get("scope", [])),
            inject_at=inject,
            revert_at=float(r["revert_at"]) if reverted else max(run_end, inject),
            reverted=reverted,
            rank=rank,
            horizon=float(r["revert_at"]) + ATTRIBUTION_GRACE_S if reverted else max(run_end, inject),
        )
        for rank, (inject, fault_id, r, reverted) in enumerate(parsed)
    ]


def _alerts(records: list[dict[str, Any]], namespace: str) -> dict[str, Alert]:
    """One entry per alert id, from its earliest firing event."""
    alerts: dict[str, Alert] = {}
    for r in sorted(records, key=_order_key):
        if r.get("event") != "firing" or r.get("alert_id") is None:
            continue
        alert_id = str(r["alert_id"])
        fired = _num(r.get("fired_at"), _num(r.get("t")))
        current = alerts.get(alert_id)
        if current is not None and current.first_fired <= fired:
            continue
        labels = r.get("labels") or {}
        workload = workload_of(labels)
        alerts[alert_id] = Alert(
            alert_id=alert_id,
            first_fired=fired,
            workload=None if workload is None else workload.strip().lower(),
            # An alert whose rule aggregated the namespace label away is read as the app's.
            in_namespace=str(labels.get("namespace", namespace)) == namespace,
        )
    return alerts


def _report(record: dict[str, Any]) -> Report:
    root = record.get("root_cause") or {}
    if not isinstance(root, dict):
        root = {}
    return Report(
        key=_order_key(record),
        t=_num(record.get("t")),
        incident_id=str(record.get("incident_id")),
        alert_ids=frozenset(str(a) for a in record.get("alert_ids") or ()),
        culprits=normalise_culprits(root.get("culprits", [])),
        artifact=normalise_artifact(root.get("artifact")),
        item=int(record.get("item") or 0),
    )


def _attribution(faults: list[Fault], alerts: dict[str, Alert]) -> dict[str, frozenset[str]]:
    """Fault id -> ids of the alerts attributable to it (namespace, workload in P_f, first
    fired within [inject_f, revert_f + 60 s])."""
    by_workload: dict[str, list[Fault]] = defaultdict(list)
    for fault in faults:
        for workload in fault.scope:
            by_workload[workload].append(fault)
    result: dict[str, set[str]] = {f.fault_id: set() for f in faults}
    for alert in alerts.values():
        if not alert.in_namespace or alert.workload is None:
            continue
        for fault in by_workload.get(alert.workload, ()):
            if fault.inject_at <= alert.first_fired <= fault.revert_at + ATTRIBUTION_GRACE_S:
                result[fault.fault_id].add(alert.alert_id)
    return {fault_id: frozenset(ids) for fault_id, ids in result.items()}


class Diagnosed(Protocol):
    culprits: frozenset[str]
    artifact: str | None


def located(fault: Fault, diagnosis: Diagnosed) -> bool:
    """The diagnosis names exactly the fault's culprit set and its artifact (after aliases)."""
    return (
        bool(fault.culprits)
        and diagnosis.culprits == fault.culprits
        and diagnosis.artifact is not None
        and diagnosis.artifact in fault.artifacts
    )
