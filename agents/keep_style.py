"""The Keep-style baseline: Keep's rule engine groups, a planner diagnoses and repairs.

The paper's Keep-agent runs Keep's correlation inside the agent, keeps Keep's incident store in
the workspace and sends it each alert once; one model call per invocation then diagnoses each
incident, may place the alerts no rule grouped, and proposes repairs. Here the model half is a
`planner` callable. The default planner uses no model: it blames each incident's workload with the
Runbook's rule table and applies the table's action, so keep-style and runbook differ only in who
groups alerts and when they act. Whatever a planner returns, the code keeps Keep's grouping fixed:
it may only place unassigned alerts, and a move of an alert Keep placed is discarded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_marathon.agents import keep_engine
from pytest_marathon.agents.labels import alert_id_of
from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage
from pytest_marathon.agents.remedy_table import RemedyTable, load_table
from pytest_marathon.agents.runbook import perform, root_cause
from pytest_marathon.agents.tooling import ToolOutcome, app_workloads, call_tool, report_incidents
from pytest_marathon.agents.workspace import load_state, save_state

STATE_FILE = "keep_store.json"
# An incident is acted on again only when an alert fired after its last action and at least this
# long after it: a repair needs time to roll out before its incident's alerts can clear.
DEFAULT_COOLDOWN_S = 600.0


@dataclass(frozen=True)
class KeepIncident:
    """An incident as the planner sees it; its alert set is fixed by the rules."""

    incident_id: str
    rule: str
    group: str
    workload: str | None
    alert_ids: tuple[str, ...]
    new_alert_ids: tuple[str, ...]
    last_action_at: float | None
    root_cause: Mapping[str, Any] | None


@dataclass(frozen=True)
class PlannerInput:
    ctx: InvocationContext
    incidents: tuple[KeepIncident, ...]
    unassigned: tuple[Mapping[str, Any], ...]
    alerts_by_id: Mapping[str, Mapping[str, Any]]
    #: Incidents a planner opened earlier for unassigned alerts (rule "planner"), so a model
    #: planner can show them as its earlier incidents.
    planner_incidents: tuple[KeepIncident, ...] = ()


@dataclass(frozen=True)
class IncidentPlan:
    """The planner's word on one incident.

    `repair` is `{"action": "rollback"|"restart"|"scale_up"}` (a scripted action on the
    incident's workload) or `{"tool": <act tool>, "args": {...}}`; the incident id is added.
    `add_alert_ids` may only name unassigned alerts; a new `incident_id` opens a planner incident.
    """

    incident_id: str
    root_cause: Mapping[str, Any] | None = None
    repair: Mapping[str, Any] | None = None
    status: str = "open"
    add_alert_ids: tuple[str, ...] = ()


Planner = Callable[[PlannerInput], tuple[Sequence[IncidentPlan], InvocationUsage | None]]


@dataclass
class RunbookPlanner:
    """The model-free planner: the Runbook table's category and action for each incident's
    workload, re-decided from the alerts that arrived since the last decision; a workload is
    repaired again only when an alert fires `cooldown_s` after its last repair."""

    table: RemedyTable = field(default_factory=load_table)
    cooldown_s: float = DEFAULT_COOLDOWN_S

    def __call__(self, data: PlannerInput) -> tuple[Sequence[IncidentPlan], InvocationUsage | None]:
        # Keep may hold several incidents for one workload (one per rule that named it); one
        # repair per workload and cooldown, or a second rollback would undo the first.
        last_action: dict[str, float] = {}
        for incident in data.incidents:
            if incident.workload is not None and incident.last_action_at is not None:
                last = last_action.get(incident.workload, incident.last_action_at)
                last_action[incident.workload] = max(last, incident.last_action_at)
        plans = []
        for incident in data.incidents:
            if not incident.new_alert_ids or incident.workload is None:
                continue
            names = [str(data.alerts_by_id[a].get("alertname", "")) for a in incident.new_alert_ids]
            row = self.table.choose(names)
            newest = max(float(data.alerts_by_id[a].get("fired_at") or 0.0) for a in incident.new_alert_ids)
            previous = last_action.get(incident.workload)
            due = previous is None or newest >= previous + self.cooldown_s
            if due:
                last_action[incident.workload] = data.ctx.t
            plans.append(
                IncidentPlan(
                    incident.incident_id,
                    root_cause=root_cause(incident.workload, row, names),
                    repair={"action": row.action} if due else None,
                )
            )
        return plans, None


class KeepStyleAgent:
    """Keep's correlation rules in the agent's process, with a pluggable planner."""

    name = "keep-style"
    description = "Keep-style CEL correlation rules (no model by default) with the Runbook's remedies"
    needs_ground_truth = False

    def __init__(
        self,
        rules: keep_engine.KeepRuleSet | None = None,
        planner: Planner | None = None,
        rules_path: Path | None = None,
    ) -> None:
        self.rules = rules or keep_engine.load_rules(rules_path)
        self.planner: Planner = planner or RunbookPlanner()
        self.uses_models = planner is not None  # the default planner calls no model

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None:
        store = load_state(ctx.workspace, STATE_FILE, keep_engine.empty_store())
        store.setdefault("decided", {})  # incident id -> alert ids already shown to the planner
        store.setdefault("actions", {})  # incident id -> time of its last action
        store.setdefault("root_causes", {})
        store.setdefault("planner_incidents", {})  # incident id -> alert ids a planner placed
        alerts_by_id = {alert_id_of(a): a for a in ctx.alerts}
        touched = keep_engine.ingest(store, self.rules, ctx.alerts)
        workloads = app_workloads(ctx.tools)
        plans, usage = self.planner(self._planner_input(ctx, store, alerts_by_id, workloads))
        touched |= self._apply_placements(store, plans)
        for plan in plans:
            if plan.root_cause is not None:
                store["root_causes"][plan.incident_id] = dict(plan.root_cause)
                touched.add(plan.incident_id)
        for incident in store["incidents"]:
            store["decided"][incident["incident_id"]] = list(incident["alert_ids"])
        self._report(ctx, store, touched, {p.incident_id: p.status for p in plans})
        for plan in plans:
            reported = plan.incident_id not in store["report_errors"]
            if plan.repair is not None and reported and self._has_incident(store, plan.incident_id):
                outcome = self._repair(ctx, store, plan)
                if outcome.ok:
                    store["actions"][plan.incident_id] = ctx.t
        save_state(ctx.workspace, STATE_FILE, store)
        return usage

    @staticmethod
    def _planner_input(
        ctx: InvocationContext,
        store: Mapping[str, Any],
        alerts_by_id: Mapping[str, Mapping[str, Any]],
        workloads: set[str] | None,
    ) -> PlannerInput:
        """Keep's incidents, fixed; a group named by something that is not a workload of the
        application (a datastore exporter's own name) is shown without a workload."""
        incidents = []
        for inc in store["incidents"]:
            workload = inc["workload"] if workloads is None or inc["workload"] in workloads else None
            decided = set(store["decided"].get(inc["incident_id"], ()))
            incidents.append(
                KeepIncident(
                    inc["incident_id"],
                    inc["rule"],
                    inc["fingerprint"],
                    workload,
                    tuple(inc["alert_ids"]),
                    tuple(a for a in inc["alert_ids"] if a not in decided),
                    store["actions"].get(inc["incident_id"]),
                    store["root_causes"].get(inc["incident_id"]),
                )
            )
        unassigned = tuple(alerts_by_id[a] for a in store["unassigned"] if a in alerts_by_id)
        placed = tuple(
            KeepIncident(
                incident_id,
                "planner",
                "",
                None,
                tuple(alert_ids),
                (),
                store["actions"].get(incident_id),
                store["root_causes"].get(incident_id),
            )
            for incident_id, alert_ids in store["planner_incidents"].items()
        )
        return PlannerInput(ctx, tuple(incidents), unassigned, alerts_by_id, placed)

    @staticmethod
    def _apply_placements(store: dict[str, Any], plans: Sequence[IncidentPlan]) -> set[str]:
        """Move unassigned alerts where the planner put them; anything else is discarded."""
        touched: set[str] = set()
        keep_ids = {inc["incident_id"] for inc in store["incidents"]}
        for plan in plans:
            placeable = [a for a in plan.add_alert_ids if a in store["unassigned"]]
            if not placeable:
                continue
            if plan.incident_id in keep_ids:
                target = next(i for i in store["incidents"] if i["incident_id"] == plan.incident_id)
                target["alert_ids"].extend(placeable)
            else:
                store["planner_incidents"].setdefault(plan.incident_id, []).extend(placeable)
            store["unassigned"] = [a for a in store["unassigned"] if a not in placeable]
            touched.add(plan.incident_id)
        return touched

    @staticmethod
    def _has_incident(store: Mapping[str, Any], incident_id: str) -> bool:
        return incident_id in store["planner_incidents"] or any(
            inc["incident_id"] == incident_id for inc in store["incidents"]
        )

    @staticmethod
    def _alert_ids(store: Mapping[str, Any], incident_id: str) -> list[str]:
        for inc in store["incidents"]:
            if inc["incident_id"] == incident_id:
                return list(inc["alert_ids"])
        return list(store["planner_incidents"].get(incident_id, []))

    def _report(
        self, ctx: InvocationContext, store: dict[str, Any], touched: set[str], statuses: Mapping[str, str]
    ) -> None:
        entries = []
        for incident_id in sorted(i for i in touched if self._has_incident(store, i)):
            entry: dict[str, Any] = {
                "incident_id": incident_id,
                "alert_ids": self._alert_ids(store, incident_id),
                "status": statuses.get(incident_id, "open"),
            }
            if incident_id in store["root_causes"]:
                entry["root_cause"] = store["root_causes"][incident_id]
            entries.append(entry)
        store["report_errors"] = report_incidents(ctx.tools, entries)

    @staticmethod
    def _repair(ctx: InvocationContext, store: Mapping[str, Any], plan: IncidentPlan) -> ToolOutcome:
        repair = plan.repair or {}
        if "action" in repair:
            workload = next(
                (i["workload"] for i in store["incidents"] if i["incident_id"] == plan.incident_id),
                None,
            )
            if workload is None:
                return ToolOutcome(False, {}, "incident names no workload")
            return perform(ctx.tools, str(repair["action"]), workload, plan.incident_id)
        args = dict(repair.get("args") or {})
        args["incident_id"] = plan.incident_id
        return call_tool(ctx.tools, str(repair.get("tool")), **args)
