"""The oracle: an ideal SRE that is told the hidden schedule.

It proves every fault can be found and repaired through the ordinary tools, and calibrates the top
of the scorer. The runner hands it the schedule records of the faults injected so far
(`ctx.ground_truth`, only because it declares `needs_ground_truth`; results flag the run); it
never imports the catalog. Per fault it reports one incident holding every alert attributable to
the fault (the scorer's rule: the alert's workload is in the fault's scope and it first fired
within [inject, revert + 60 s]) with the exact culprits, artifact and category, and applies the
recorded remedy through the tools as soon as such an alert has fired.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_marathon.agents.labels import alert_id_of, workload_of
from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage
from pytest_marathon.agents.tooling import call_tool, report_incidents
from pytest_marathon.agents.workspace import load_state, save_state

STATE_FILE = "oracle_state.json"
ATTRIBUTION_GRACE_S = 60.0


def incident_id_of(fault: Mapping[str, Any]) -> str:
    return f"oracle-{fault['fault_id']}"


def attributable(fault: Mapping[str, Any], alert: Mapping[str, Any]) -> bool:
    """The scorer's attribution: workload in scope, first fired inside the fault's window."""
    fired = alert.get("fired_at")
    if fired is None:
        return False
    workload = workload_of(alert.get("labels") or {})
    in_window = float(fault["inject_at"]) <= float(fired) <= float(fault["revert_at"]) + ATTRIBUTION_GRACE_S
    return in_window and workload in set(fault.get("scope") or ())


def remedy_steps(fault: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    remedy = fault.get("remedy")
    return [] if remedy in (None, "none") else list(remedy)


class OracleAgent:
    name = "oracle"
    description = "Reads the hidden schedule and applies each fault's recorded remedy (upper bound; flagged)"
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
        self._report(ctx, state, faults, alerts_of)
        self._remedy(ctx, state, faults, alerts_of)
        save_state(ctx.workspace, STATE_FILE, state)
        return None

    @staticmethod
    def _report(
        ctx: InvocationContext,
        state: dict[str, Any],
        faults: Sequence[Mapping[str, Any]],
        alerts_of: Mapping[str, list[str]],
    ) -> None:
        entries = []
        for fault in faults:
            fault_id = str(fault["fault_id"])
            alert_ids = alerts_of[fault_id]
            if not alert_ids or state["reported"].get(fault_id) == alert_ids:
                continue
            done = state["remedies"].get(fault_id, {}).get("ok")
            entries.append(
                {
                    "incident_id": incident_id_of(fault),
                    "alert_ids": alert_ids,
                    "status": "mitigated" if done else "open",
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
                state["reported"][entry["incident_id"].removeprefix("oracle-")] = entry["alert_ids"]
        state["report_errors"] = failed

    @staticmethod
    def _remedy(
        ctx: InvocationContext,
        state: dict[str, Any],
        faults: Sequence[Mapping[str, Any]],
        alerts_of: Mapping[str, list[str]],
    ) -> None:
        """Apply due remedies, most urgent (earliest revert) first; a refusal (e.g. the
        per-invocation mutation cap) is retried at the next invocation, an error is final."""
        due = [
            f
            for f in faults
            if str(f["fault_id"]) in state["reported"]
            and alerts_of[str(f["fault_id"])]
            and float(f["revert_at"]) > ctx.t
            and remedy_steps(f)
            and str(f["fault_id"]) not in state["remedies"]
        ]
        for fault in sorted(due, key=lambda f: (float(f["revert_at"]), str(f["fault_id"]))):
            fault_id = str(fault["fault_id"])
            record: dict[str, Any] = {"t": ctx.t, "ok": True, "steps": []}
            for step in remedy_steps(fault):
                args = dict(step.get("args") or {})
                args["incident_id"] = incident_id_of(fault)
                outcome = call_tool(ctx.tools, str(step["tool"]), **args)
                record["steps"].append({"tool": step["tool"], "ok": outcome.ok, "error": outcome.error})
                if not outcome.ok:
                    record["ok"] = False
                    break
            if not record["ok"] and outcome.result.get("verdict") == "refused":
                continue  # not executed: try again next invocation
            state["remedies"][fault_id] = record
