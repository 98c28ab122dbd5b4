"""The RAG baseline (paper, Appendix G, "RAG"), on the shared model client.

Which sentence of the paper each rule implements:

* "RAG makes one model call per invocation, and the model calls no tools." -> one
  `ModelClient.complete` per invocation, with no tools offered (JSON mode). An invocation whose
  alert history is still empty makes no call: there is nothing to group, diagnose or repair.
* "It retrieves from the live telemetry of that invocation and reads the topology, then the logs
  and traces of up to five services ... within 45 s. Each tool answer, cut to 1200 characters, is
  one document. Then it ranks the documents against a query made of every alert's rule name and
  label values, and the top five enter the prompt beside the alerts and the incidents of earlier
  invocations." -> `retrieval.py` (BM25) and `planning.plan_messages`; the incidents of earlier
  invocations are the plans it published, kept in its workspace (`rag_state.json`).
* "The model returns one plan that groups alerts into incidents and gives each a root cause, an
  optional repair from the act and guarded tools, and a status." -> `plan.parse_plan`.
* "The code publishes and executes the plan as written." -> one `report_incidents` with every
  planned incident, then each repair in plan order, citing its incident. A repair whose incident
  the interface refused to store is not run (an action must cite a reported incident).

A model that cannot be reached (budget spent, endpoint down) or an answer that is no plan leaves
the invocation a recorded no-op (`detail` says why) and the run going.
"""

from __future__ import annotations

from typing import Any

from pytest_marathon.agents.llm import ModelBaseline, ModelClient
from pytest_marathon.agents.plan import Plan
from pytest_marathon.agents.planning import ask_for_plan, journal
from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage
from pytest_marathon.agents.tooling import call_tool, report_incidents
from pytest_marathon.agents.workspace import load_state, save_state

STATE_FILE = "rag_state.json"
JOURNAL = "rag_journal.jsonl"


def publish_and_execute(ctx: InvocationContext, plan: Plan) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Report every planned incident, then run each repair in order; returns the incidents the
    interface refused to store and what each repair did."""
    failed = report_incidents(ctx.tools, [inc.report_entry() for inc in plan.incidents])
    repairs = []
    for incident in plan.incidents:
        if incident.repair is None or incident.incident_id in failed:
            continue
        outcome = call_tool(ctx.tools, incident.repair.tool, **incident.repair.args)
        repairs.append(
            {
                "incident_id": incident.incident_id,
                "tool": incident.repair.tool,
                "args": incident.repair.args,
                "ok": outcome.ok,
                "error": outcome.error,
            }
        )
    return failed, repairs


def remember(state: dict[str, Any], ctx: InvocationContext, plan: Plan, failed: dict[str, str],
             repairs: list[dict[str, Any]]) -> None:
    """Fold what was published into the stored incidents (the prompt's "earlier incidents")."""
    by_id = {inc["incident_id"]: inc for inc in state["incidents"]}
    for incident in plan.incidents:
        if incident.incident_id in failed:
            continue
        stored = by_id.get(incident.incident_id)
        if stored is None:
            stored = {"incident_id": incident.incident_id, "alert_ids": [], "repairs": []}
            state["incidents"].append(stored)
            by_id[incident.incident_id] = stored
        if incident.alert_ids:
            placed = set(incident.alert_ids)
            for other in state["incidents"]:  # the interface moved these alerts here
                other["alert_ids"] = [a for a in other["alert_ids"] if a not in placed]
            stored["alert_ids"] = list(incident.alert_ids)
        stored["status"] = incident.status
        if incident.root_cause:
            stored["root_cause"] = dict(incident.root_cause)
    for repair in repairs:
        by_id[repair["incident_id"]]["repairs"].append(
            {"t": ctx.t, "tool": repair["tool"], "args": repair["args"], "ok": repair["ok"]}
        )


class RagAgent(ModelBaseline):
    """The paper's RAG baseline."""

    name = "rag"
    description = "RAG (paper baseline): one model call per invocation over retrieved telemetry"

    @staticmethod
    def _invoke(ctx: InvocationContext, client: ModelClient) -> InvocationUsage:
        if not ctx.alerts:
            return client.usage(["no alerts yet: no model call"])
        state = load_state(ctx.workspace, STATE_FILE, {"incidents": []})
        outcome = ask_for_plan(ctx, client, state["incidents"])
        if outcome.plan is None:
            journal(ctx, JOURNAL, {"no_op": outcome.note})
            return client.usage([outcome.note], failed=outcome.model_failed and not outcome.expected)
        failed, repairs = publish_and_execute(ctx, outcome.plan)
        remember(state, ctx, outcome.plan, failed, repairs)
        save_state(ctx.workspace, STATE_FILE, state)
        notes = list(outcome.plan.problems)
        notes += [f"incident {i} not stored: {error}" for i, error in sorted(failed.items())]
        notes += [f"repair {r['tool']} on {r['incident_id']} failed: {r['error']}" for r in repairs if not r["ok"]]
        journal(ctx, JOURNAL, {"problems": list(outcome.plan.problems), "repairs": repairs,
                               "refused_incidents": failed})
        return client.usage(notes)
