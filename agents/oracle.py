"""The oracle: an ideal SRE that is told the hidden schedule.

It proves every fault can be found and repaired through the ordinary tools, and calibrates the top
of the scorer. The runner hands it the schedule records of the faults injected so far
(`ctx.ground_truth`, only because it declares `needs_ground_truth`; results flag the run); it
never imports the catalog. At every invocation it files every alert attributable to a fault (the
scorer's rule: the alert's workload is in the fault's scope and it first fired within
[inject, revert + 60 s]) into that fault's incident with the exact culprits, artifact and
category — `remedy: none` faults included — and applies the recorded remedy through the tools at
the first invocation that sees such an alert.

Incidents partition the alerts (an alert belongs to one incident; reporting it elsewhere moves
it), and an alert may be attributable to several overlapping faults (a frontend error alert during
two backend faults). The oracle files each alert under one fault's incident (`partition_alerts`):
where it was before if that is still possible, else the oldest fault it is attributable to (the
scorer's matching serves faults in injection order, each taking the incident that first held one
of its alerts, so an older fault's incident must not be beaten to it by a newer one's); then
a fault left with no alert takes one from a fault that holds several, so every fault that can be
correlated is. A fault whose alerts it had to give away is still repaired, citing the incident
that holds its alert.

Several live faults may sit on one deployment. Applying their recorded `rollback_service` steps
one after the other would undo each other (a second `rollout undo` returns to the revision the
first one left), so the oracle rolls each deployment back once, to the revision that was current
before the earliest of those faults was released, then re-applies the configuration remedies of
live faults the rollback undid, then runs the remaining steps.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_marathon.agents.labels import alert_id_of, workload_of
from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage, ToolClient
from pytest_marathon.agents.tooling import ToolOutcome, call_tool, report_incidents
from pytest_marathon.agents.workspace import load_state, save_state

STATE_FILE = "oracle_state.json"
ATTRIBUTION_GRACE_S = 60.0
ROLLBACK = "rollback_service"
RECONFIGURE = "update_config"
# The orchestrator releases a fault at the start of the tick that reaches its inject time, while
# the live system's clock still shows the previous tick: the fault's revision may be stamped up to
# one tick (5 s) before `inject_at`.
RELEASE_SLACK_S = 5.0

Fault = Mapping[str, Any]


def incident_id_of(fault: Fault) -> str:
    return f"oracle-{fault['fault_id']}"


def attributable(fault: Fault, alert: Mapping[str, Any]) -> bool:
    """The scorer's attribution: workload in scope, first fired inside the fault's window."""
    fired = alert.get("fired_at")
    if fired is None:
        return False
    workload = workload_of(alert.get("labels") or {})
    in_window = float(fault["inject_at"]) <= float(fired) <= float(fault["revert_at"]) + ATTRIBUTION_GRACE_S
    return in_window and workload in set(fault.get("scope") or ())


def remedy_steps(fault: Fault) -> list[Mapping[str, Any]]:
    remedy = fault.get("remedy")
    return [] if remedy in (None, "none") else list(remedy)


def step_target(step: Mapping[str, Any]) -> str | None:
    """The deployment a remedy step changes (None for app-wide changes such as a flag)."""
    service = (step.get("args") or {}).get("service")
    return str(service) if service else None


def rollback_revision(tools: ToolClient, service: str, inject_at: float) -> int | None | bool:
    """Where to roll `service` back so no change released at or after `inject_at` stays live.

    The fault's release created the first revision stamped at `inject_at` or later (less the
    release slack); the target is the
    newest revision older than it. Returns that revision number, `None` when the history does not
    show the fault's revision (a plain `rollout undo` is then the best guess), or `False` when
    the current revision predates the fault (someone already rolled back: nothing to do)."""
    outcome = call_tool(tools, "get_rollout_history", service=service)
    revisions = outcome.result.get("revisions") if outcome.ok else None
    if not isinstance(revisions, list) or not revisions:
        return None
    dated = [r for r in revisions if isinstance(r, Mapping) and r.get("created_at") is not None]
    current = next((r for r in dated if r.get("current")), None)
    released = inject_at - RELEASE_SLACK_S
    if current is not None and float(current["created_at"]) < released:
        return False
    introduced = [r for r in dated if float(r["created_at"]) >= released]
    if not introduced:
        return None
    faulty = min(introduced, key=lambda r: (float(r["created_at"]), int(r["revision"])))
    older = [r for r in dated if int(r["revision"]) < int(faulty["revision"])]
    return max(int(r["revision"]) for r in older) if older else None


def partition_alerts(
    faults: Sequence[Fault], alerts_of: Mapping[str, list[str]], previous: Mapping[str, str]
) -> dict[str, str]:
    """Alert id -> the one fault whose incident files it.

    `faults` in injection order; `alerts_of` each fault's attributable alerts; `previous` the last
    invocation's answer. An alert stays where it was while that fault can hold it (no needless
    moves); a new one goes to the oldest fault it is attributable to, so that no newer fault's
    incident holds an older fault's alert first (the matching's preference). Then each fault
    that holds nothing takes an alert of its own from a fault that holds more than one, so the
    one-to-one matching can pair it with an incident."""
    candidates: dict[str, list[str]] = {}
    for fault in faults:
        for alert in alerts_of[str(fault["fault_id"])]:
            candidates.setdefault(alert, []).append(str(fault["fault_id"]))
    owner = {a: previous[a] if previous.get(a) in ids else ids[0] for a, ids in sorted(candidates.items())}
    held = Counter(owner.values())
    for fault in faults:
        fault_id = str(fault["fault_id"])
        if held[fault_id]:
            continue
        spare = next((a for a in alerts_of[fault_id] if held[owner[a]] > 1), None)
        if spare is not None:
            held[owner[spare]] -= 1
            owner[spare] = fault_id
            held[fault_id] += 1
    return owner


class OracleAgent:
    name = "oracle"
    description = "Reads the hidden schedule and applies each fault's recorded remedy (upper bound; flagged)"
    uses_models = False  # runs without a metering proxy
    needs_ground_truth = True

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None:
        if ctx.ground_truth is None:
            raise RuntimeError("the oracle needs ctx.ground_truth (the runner hands it to agents "
                               "with needs_ground_truth = True)")
        state = load_state(ctx.workspace, STATE_FILE, {"reported": {}, "remedies": {}})
        faults = sorted(ctx.ground_truth, key=lambda f: (float(f["inject_at"]), str(f["fault_id"])))
        alerts_of = {
            str(f["fault_id"]): sorted(alert_id_of(a) for a in ctx.alerts if attributable(f, a))
            for f in faults
        }
        owner = partition_alerts(faults, alerts_of, state.get("owner", {}))
        state["owner"] = owner
        filed = {fault_id: [a for a in alerts if owner[a] == fault_id] for fault_id, alerts in alerts_of.items()}
        # the incident an action for a fault cites: its own, or the one holding its alert
        state["cite"] = {
            fault_id: incident_id_of({"fault_id": fault_id if filed[fault_id] else owner[alerts[0]]})
            for fault_id, alerts in alerts_of.items()
            if alerts
        }
        self._remedy(ctx, state, faults, alerts_of, filed)
        self._report(ctx, state, faults, filed)
        save_state(ctx.workspace, STATE_FILE, state)
        return None

    @staticmethod
    def _status(fault: Fault, state: Mapping[str, Any], t: float) -> str:
        if float(fault["revert_at"]) <= t:
            return "resolved"
        return "mitigated" if state["remedies"].get(str(fault["fault_id"]), {}).get("ok") else "open"

    def _report(
        self,
        ctx: InvocationContext,
        state: dict[str, Any],
        faults: Sequence[Fault],
        alerts_of: Mapping[str, list[str]],
    ) -> None:
        """Upsert every fault's incident whose alerts or status changed; a fault is reported
        as soon as it holds an alert, whether or not it has a remedy. `alerts_of` is the
        partition, so no call lists an alert twice and no move is left unsaid."""
        entries = []
        for fault in faults:
            fault_id = str(fault["fault_id"])
            alert_ids = alerts_of[fault_id]
            status = self._status(fault, state, ctx.t)
            if not alert_ids or state["reported"].get(fault_id) == {"alerts": alert_ids, "status": status}:
                continue
            entries.append(
                {
                    "incident_id": incident_id_of(fault),
                    "alert_ids": alert_ids,
                    "status": status,
                    "root_cause": {
                        "culprits": sorted(fault["culprits"]),
                        "artifact": fault["artifact"],
                        "category": fault["category"],
                        "text": f"oracle: fault {fault_id} ({fault.get('catalog_id')})",
                    },
                }
            )
        failed = report_incidents(ctx.tools, entries)
        for entry in entries:
            if entry["incident_id"] not in failed:
                fault_id = entry["incident_id"].removeprefix("oracle-")
                state["reported"][fault_id] = {"alerts": entry["alert_ids"], "status": entry["status"]}
        state["report_errors"] = failed

    def _remedy(
        self,
        ctx: InvocationContext,
        state: dict[str, Any],
        faults: Sequence[Fault],
        alerts_of: Mapping[str, list[str]],
        filed: Mapping[str, list[str]],
    ) -> None:
        """Apply the due remedies, deployment by deployment, most urgent (earliest revert)
        first. An action must cite a reported incident, so the incidents are reported first. A
        refusal (the per-invocation mutation cap) leaves the fault due for the next invocation;
        an error is final."""
        due = [
            f
            for f in faults
            if alerts_of[str(f["fault_id"])]
            and float(f["revert_at"]) > ctx.t
            and remedy_steps(f)
            and str(f["fault_id"]) not in state["remedies"]
        ]
        if not due:
            return
        self._report(ctx, state, faults, filed)
        reported = {incident_id_of({"fault_id": fault_id}) for fault_id in state["reported"]}
        due = [f for f in due if state["cite"][str(f["fault_id"])] in reported]
        by_target: dict[str | None, list[Fault]] = {}
        for fault in sorted(due, key=lambda f: (float(f["revert_at"]), str(f["fault_id"]))):
            targets = {step_target(s) for s in remedy_steps(fault)}
            by_target.setdefault(min(targets, key=lambda x: x or ""), []).append(fault)
        for target, group in by_target.items():
            records = {str(f["fault_id"]): {"t": ctx.t, "ok": True, "steps": []} for f in group}
            refused = self._remedy_target(ctx, state, target, group, faults, records)
            for fault_id, record in records.items():
                if fault_id not in refused:
                    state["remedies"][fault_id] = record

    def _remedy_target(
        self,
        ctx: InvocationContext,
        state: dict[str, Any],
        target: str | None,
        group: Sequence[Fault],
        faults: Sequence[Fault],
        records: dict[str, dict[str, Any]],
    ) -> set[str]:
        """Remedy the faults of one deployment; returns the ids whose remedy was refused."""
        refused: set[str] = set()
        rollers = [f for f in group if any(s["tool"] == ROLLBACK for s in remedy_steps(f))]
        if rollers and target is not None:
            earliest = min(rollers, key=lambda f: float(f["inject_at"]))
            revision = rollback_revision(ctx.tools, target, float(earliest["inject_at"]))
            outcome = None
            if revision is not False:
                args: dict[str, Any] = {"service": target, "incident_id": state["cite"][str(rollers[0]["fault_id"])]}
                if revision is not None:
                    args["to_revision"] = revision
                outcome = call_tool(ctx.tools, ROLLBACK, **args)
                if outcome.result.get("verdict") == "refused":
                    return {str(f["fault_id"]) for f in group}
            for fault in rollers:
                self._note(records[str(fault["fault_id"])], ROLLBACK, outcome)
            if outcome is not None and outcome.ok:
                self._reapply_configuration(ctx, state, target, faults)
        for fault in group:
            record = records[str(fault["fault_id"])]
            for step in remedy_steps(fault):
                if step["tool"] == ROLLBACK and target is not None:
                    continue
                if not record["ok"]:
                    break
                args = dict(step.get("args") or {})
                args["incident_id"] = state["cite"][str(fault["fault_id"])]
                outcome = call_tool(ctx.tools, str(step["tool"]), **args)
                if outcome.result.get("verdict") == "refused":
                    refused.add(str(fault["fault_id"]))
                    break
                self._note(record, str(step["tool"]), outcome)
        return refused

    @staticmethod
    def _note(record: dict[str, Any], tool: str, outcome: ToolOutcome | None) -> None:
        if outcome is None:
            record["steps"].append({"tool": tool, "ok": True, "skipped": "already rolled back"})
            return
        record["steps"].append({"tool": tool, "ok": outcome.ok, "error": outcome.error})
        record["ok"] = record["ok"] and outcome.ok

    @staticmethod
    def _reapply_configuration(
        ctx: InvocationContext, state: Mapping[str, Any], target: str, faults: Sequence[Fault]
    ) -> None:
        """A rollback restores a whole pod template, undoing the resource/env remedies of live
        faults on the same deployment; put them back."""
        for fault in faults:
            record = state["remedies"].get(str(fault["fault_id"]))
            if record is None or not record.get("ok") or float(fault["revert_at"]) <= ctx.t:
                continue
            for step in remedy_steps(fault):
                if step["tool"] == RECONFIGURE and step_target(step) == target:
                    args = dict(step.get("args") or {})
                    args["incident_id"] = state["cite"].get(str(fault["fault_id"]), incident_id_of(fault))
                    call_tool(ctx.tools, RECONFIGURE, **args)
