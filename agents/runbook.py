"""The Runbook baseline (paper, Appendix G): no model, one incident per workload, one action each.

Alerts are grouped into one incident per workload their labels name; a closed incident's workload
alerting again opens a new incident. The fixed rule table picks one scripted action and a blamed
category per new incident; the runbook reports the workload and category, runs the action once,
and at the next invocation closes the incident: `resolved` if the action succeeded, left `open`
(never claimed repaired) if it failed — either way the next alert of that workload opens a new
incident (the choice for a failed action is argued in `runbook_table.yaml`'s header). Everything
it remembers lives in its workspace, since each invocation may be a fresh process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_marathon.agents.labels import alert_id_of, alert_sort_key, workload_of
from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage, ToolClient
from pytest_marathon.agents.remedy_table import RemedyTable, Row, load_table
from pytest_marathon.agents.tooling import ToolOutcome, app_workloads, call_tool, report_incidents
from pytest_marathon.agents.workspace import load_state, save_state

STATE_FILE = "runbook_state.json"
MAX_REPLICAS = 20


def current_replicas(tools: ToolClient, workload: str) -> int | None:
    """The deployment's desired replicas as the Kubernetes object states them."""
    outcome = call_tool(tools, "get_resources", kind="deployments", name=workload)
    if not outcome.ok:
        return None
    stack: list[Any] = [outcome.result]
    while stack:  # the object may come wrapped (`{"object": {...}}`, `{"items": [...]}`)
        node = stack.pop()
        if isinstance(node, Mapping):
            spec = node.get("spec")
            if isinstance(spec, Mapping) and isinstance(spec.get("replicas"), int):
                return spec["replicas"]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def perform(tools: ToolClient, action: str, workload: str, incident_id: str) -> ToolOutcome:
    """Run one scripted action of the table against a workload, citing the incident."""
    if action == "rollback":
        return call_tool(tools, "rollback_service", incident_id=incident_id, service=workload)
    if action == "restart":
        return call_tool(tools, "restart_service", incident_id=incident_id, service=workload)
    if action == "scale_up":
        replicas = current_replicas(tools, workload) or 1
        return call_tool(
            tools,
            "scale_service",
            incident_id=incident_id,
            service=workload,
            replicas=min(MAX_REPLICAS, replicas + 1),
        )
    raise ValueError(f"unknown scripted action {action!r}")


def root_cause(workload: str, row: Row, alertnames: Sequence[str]) -> dict[str, Any]:
    return {
        "culprits": [workload],
        "artifact": row.artifact(workload),
        "category": row.category,
        "text": f"runbook rule {row.rule} (alerts: {', '.join(sorted(set(alertnames)))}) -> {row.action}",
    }


class RunbookAgent:
    """The paper's rule-based Runbook."""

    name = "runbook"
    description = "Rule-based Runbook (no model): one incident per workload, one scripted action from a fixed rule table"
    uses_models = False  # runs without a metering proxy
    needs_ground_truth = False

    def __init__(self, table: RemedyTable | None = None, table_path: Path | None = None) -> None:
        self.table = table or load_table(table_path)

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None:
        state = load_state(ctx.workspace, STATE_FILE, {"incidents": [], "assigned": {}, "next": 1})
        changed: set[str] = set()
        # Alerts that fired while an incident was open join it before it is closed; only
        # alerts that fire after the closing invocation open a new incident.
        workloads = app_workloads(ctx.tools)
        new_ids = self._group(state, ctx.alerts, ctx.t, changed, workloads)
        self._close_acted(state, changed)
        incidents = {inc["incident_id"]: inc for inc in state["incidents"]}
        names_by_alert = {alert_id_of(a): str(a.get("alertname", "")) for a in ctx.alerts}
        for incident_id in new_ids:
            inc = incidents[incident_id]
            names = [names_by_alert.get(a, "") for a in inc["alert_ids"]]
            row = self.table.choose(names)
            inc.update(rule=row.rule, action=row.action, root_cause=root_cause(inc["workload"], row, names))
        changed |= {i for i, inc in incidents.items() if inc.pop("report_error", None) and not inc.get("closed")}
        failed = report_incidents(ctx.tools, [self._report_entry(incidents[i]) for i in sorted(changed)])
        for incident_id, error in failed.items():
            incidents[incident_id]["report_error"] = error
        # Act once per incident. An action must cite a reported incident, and one the mutation
        # cap refused was not run: both wait for the next invocation.
        for inc in state["incidents"]:
            if inc.get("closed") or "acted_at" in inc or inc["incident_id"] in failed:
                continue
            outcome = perform(ctx.tools, inc["action"], inc["workload"], inc["incident_id"])
            if outcome.result.get("verdict") == "refused":
                continue
            inc.update(acted_at=ctx.t, action_ok=outcome.ok, action_error=outcome.error)
        save_state(ctx.workspace, STATE_FILE, state)
        return None

    @staticmethod
    def _report_entry(inc: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "incident_id": inc["incident_id"],
            "alert_ids": list(inc["alert_ids"]),
            "status": inc["status"],
            "root_cause": inc["root_cause"],
        }

    @staticmethod
    def _close_acted(state: dict[str, Any], changed: set[str]) -> None:
        """An incident acted on at an earlier invocation is closed now: resolved when its action
        succeeded; when it failed, closed without a claim of repair, so that the workload's next
        alert opens a fresh incident (and a fresh action) instead of piling into a dead one."""
        for inc in state["incidents"]:
            if inc.get("closed") or "acted_at" not in inc:
                continue
            inc["closed"] = True
            if inc.get("action_ok"):
                inc["status"] = "resolved"
                changed.add(inc["incident_id"])

    @staticmethod
    def _group(
        state: dict[str, Any],
        alerts: Sequence[Mapping[str, Any]],
        t: float,
        changed: set[str],
        workloads: set[str] | None,
    ) -> list[str]:
        """File every alert not seen before under its workload's open incident, or open one.
        Alerts whose labels name no workload of the application (a node, a datastore exporter's
        own name) have no incident: the runbook could neither blame nor act on them."""
        assigned: dict[str, str] = state["assigned"]
        open_by_workload = {inc["workload"]: inc for inc in state["incidents"] if not inc.get("closed")}
        new_ids: list[str] = []
        for alert in sorted(alerts, key=alert_sort_key):
            alert_id = alert_id_of(alert)
            workload = workload_of(alert.get("labels") or {})
            if alert_id in assigned or workload is None:
                continue
            if workloads is not None and workload not in workloads:
                continue
            inc = open_by_workload.get(workload)
            if inc is None:
                inc = {
                    "incident_id": f"rb-{state['next']:04d}",
                    "workload": workload,
                    "alert_ids": [],
                    "status": "open",
                    "opened_at": t,
                }
                state["next"] += 1
                state["incidents"].append(inc)
                open_by_workload[workload] = inc
                new_ids.append(inc["incident_id"])
            inc["alert_ids"].append(alert_id)
            assigned[alert_id] = inc["incident_id"]
            changed.add(inc["incident_id"])
        return new_ids
