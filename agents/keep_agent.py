"""The Keep-agent baseline (paper, Appendix G, "Keep-agent"): Keep's rules group, a model plans.

Which sentence of the paper each rule implements:

* "Keep-agent runs Keep inside the agent's process at every invocation, keeps its incident store
  in the persistent workspace, and sends it each alert once." and the rules sentences -> the
  model-free keep-style agent's engine, store and `keep_rules.yaml`, unchanged (`KeepStyleAgent`).
* "To this we add one model call per invocation with RAG's prompt, telemetry retrieval, and plan
  format, unchanged." -> `ModelPlanner` calls `planning.ask_for_plan`, the same function RAG
  calls (none while the alert history is empty).
* "The prompt lists Keep's incidents as fixed: the model may place only the alerts no rule
  grouped, and the code discards any move of an alert Keep placed." -> `FixedGrouping` adds
  Keep's incidents and the unassigned alerts to RAG's prompt; `KeepStyleAgent` applies only
  placements of unassigned alerts, and each discarded move is named in the invocation's detail.
* "The model gives each incident a root cause, an optional repair, and a status. Each repair is
  sent through ... the agent-system interface, so the policy enforcement layer checks it" -> the
  plan's repairs (act tools only, `plan.parse_plan`) become `{"tool", "args"}` repairs that
  `KeepStyleAgent` calls through the normal tools, citing their incident.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_marathon.agents.keep_style import (
    IncidentPlan,
    KeepIncident,
    KeepStyleAgent,
    PlannerInput,
)
from pytest_marathon.agents.labels import alert_id_of
from pytest_marathon.agents.llm import (
    ModelClient,
    ModelSettings,
    client_for,
    require_client_library,
)
from pytest_marathon.agents.planning import FixedGrouping, ask_for_plan, journal
from pytest_marathon.agents.protocol import InvocationUsage

JOURNAL = "keep_agent_journal.jsonl"


def _shown(incident: KeepIncident, fixed: bool) -> dict[str, Any]:
    shown: dict[str, Any] = {"incident_id": incident.incident_id, "alert_ids": list(incident.alert_ids)}
    if fixed:
        shown["grouped_by"] = f"{incident.rule}={incident.group}"
    if incident.root_cause:
        shown["root_cause"] = dict(incident.root_cause)
    if incident.last_action_at is not None:
        shown["repairs"] = [{"t": incident.last_action_at}]
    return shown


class ModelPlanner:
    """The model's half: RAG's prompt with Keep's incidents fixed, one call, one plan."""

    def __init__(self, settings: ModelSettings | None = None) -> None:
        self.settings = settings

    def __call__(self, data: PlannerInput) -> tuple[Sequence[IncidentPlan], InvocationUsage | None]:
        with client_for(data.ctx, self.settings) as client:
            return self._plan(data, client)

    @staticmethod
    def _plan(data: PlannerInput, client: ModelClient) -> tuple[Sequence[IncidentPlan], InvocationUsage | None]:
        ctx = data.ctx
        if not ctx.alerts:
            return [], client.usage(["no alerts yet: no model call"])
        fixed = FixedGrouping([_shown(i, True) for i in data.incidents], list(data.unassigned))
        earlier = [_shown(i, False) for i in data.planner_incidents]
        outcome = ask_for_plan(ctx, client, earlier, fixed)
        if outcome.plan is None:
            journal(ctx, JOURNAL, {"no_op": outcome.note})
            return [], client.usage([outcome.note], failed=outcome.model_failed and not outcome.expected)
        owner = {a: i.incident_id for i in data.incidents for a in i.alert_ids}
        known = {i.incident_id for i in (*data.incidents, *data.planner_incidents)}
        loose = {alert_id_of(a) for a in data.unassigned}
        notes = list(outcome.plan.problems)
        plans = []
        for planned in outcome.plan.incidents:
            for alert_id in planned.alert_ids:
                if owner.get(alert_id, planned.incident_id) != planned.incident_id:
                    notes.append(
                        f"move of alert {alert_id} (Keep placed it in {owner[alert_id]}) to "
                        f"{planned.incident_id} discarded"
                    )
            if planned.incident_id not in known and not loose & set(planned.alert_ids):
                notes.append(f"new incident {planned.incident_id} holds no unassigned alert; dropped")
                continue
            repair = None
            if planned.repair is not None:
                repair = {"tool": planned.repair.tool, "args": planned.repair.args}
            plans.append(
                IncidentPlan(
                    planned.incident_id,
                    root_cause=planned.root_cause,
                    repair=repair,
                    status=planned.status,
                    add_alert_ids=planned.alert_ids,
                )
            )
        journal(ctx, JOURNAL, {"problems": notes})
        return plans, client.usage(notes)


class KeepAgent(KeepStyleAgent):
    """The paper's Keep-agent: the keep-style engine with the model planner."""

    name = "keep-agent"
    description = "Keep-agent (paper baseline): Keep's rules group alerts, one model call per invocation plans"

    def __init__(self, settings: ModelSettings | None = None) -> None:
        require_client_library(self.name)
        super().__init__(planner=ModelPlanner(settings))
