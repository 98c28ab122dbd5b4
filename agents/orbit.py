"""Orbit (paper, Appendix G): persistent incident state, a bounded decision loop, memory.

Orbit keeps state across invocations and organises its own work; Figure 7 of the paper shows one
invocation, which `OrbitAgent.invoke` follows in this order (each rule names its sentence):

1. "The benchmark starts a fresh process per invocation, and Orbit reloads a checkpoint, an agenda,
   its open incidents, and a durable action ledger from its workspace." -> `orbit_state.load`.
2. "An action that succeeded while the previous process died is folded back into its incident
   first." -> `orbit_actions.recover`, before anything else touches the incidents.
3. "The alert batch is merged deterministically, one incident and one agenda task per signal, and
   the complete alert-to-incident mapping is published before the model is consulted" ->
   `orbit_triage` (a signal is the workload an alert names, else its rule name); incidents whose
   alerts all resolved are validated green and closed first; every open incident is reported with
   a status and a tentative root cause before the first model call.
4. "Each step sends a fixed operating charter, the state, the last observations, the tool catalog,
   and the remaining budget, and expects one JSON decision" with one correction call, a charged
   no-op after a second failure, "Ten steps, a token ceiling, and a mutation cap" ->
   `orbit_loop.DecisionLoop`, `orbit_decisions`.
5. "a budget ladder reduces it to triage only as the budget runs out" -> `orbit_budget` (read from
   the metering proxy's `/budget` route, or learnt from a refusal and then remembered).
6. "Source-level fixes happen only in one subagent bound to a diagnosed incident and service." ->
   `orbit_subagent`.
7. "Before yielding, Orbit publishes a status and at least a tentative root cause per open
   incident, appends at most three lessons to a bounded charter, and promotes a repair recipe to
   procedural memory only once the incident it resolved has validated green." -> the end of
   `invoke`, `orbit_memory`.

The model is any OpenAI-compatible endpoint behind the run's metering proxy (`agents.llm`; model
from MARATHON_MODEL). Tokens and dollars in the bundle are what the proxy measured; Orbit returns
no usage of its own, only a one-line detail of how the invocation went, and status `error` when
the model could not be reached for another reason than the run's budget.
"""

from __future__ import annotations

from pytest_marathon.agents.llm import ModelSettings, client_for, require_client_library
from pytest_marathon.agents.orbit_actions import recover
from pytest_marathon.agents.orbit_budget import read_budget, rung_for
from pytest_marathon.agents.orbit_decisions import FinishDecision
from pytest_marathon.agents.orbit_loop import DecisionLoop, LoopResult, move_alerts
from pytest_marathon.agents.orbit_memory import append_lessons, lessons, promote, recipes
from pytest_marathon.agents.orbit_state import OrbitState, StaleInvocation, load
from pytest_marathon.agents.orbit_triage import (
    ensure_root_causes,
    merge_batch,
    publish,
    validate_green,
)
from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage
from pytest_marathon.agents.remedy_table import RemedyTable, load_table
from pytest_marathon.agents.tooling import app_workloads


def apply_finish(state: OrbitState, finish: FinishDecision) -> set[str]:
    """The rewritten agenda, the alert moves and the claims of a `finish`; returns the incidents
    that changed."""
    changed: set[str] = set()
    for item in finish.agenda:
        task = state.task(item["task"]) if item["task"] else None
        if task is None:
            state.agenda.append({"task": state.next_id("task", "task"), "incident": item["incident"],
                                 "goal": item["goal"], "state": item["state"]})
        else:
            task.update(incident=item["incident"], goal=item["goal"], state=item["state"])
    for incident_id, alert_ids in finish.mapping.items():
        changed |= move_alerts(state, incident_id, alert_ids)
    for claim in finish.claims:
        incident = state.incident(claim["incident"])
        if incident is None:
            continue
        incident["status"] = claim["status"]
        if "root_cause" in claim:
            incident["root_cause"], incident["diagnosed"] = claim["root_cause"], True
        changed.add(claim["incident"])
    return changed


def _detail(rung: str, result: LoopResult, recovered: int, published: int) -> str:
    parts = [f"rung {rung}", f"{result.steps} steps", f"{result.mutations} mutations",
             f"{published} incidents published"]
    if recovered:
        parts.append(f"{recovered} actions recovered from the ledger")
    if result.budget_refused:
        parts.append("budget spent (a model call was refused): triage only from now on")
    if result.no_op:
        parts.append(f"no-op: {result.no_op}")
    elif result.finish is not None:
        parts.append("finished")
    elif result.stopped:
        parts.append(f"stopped: {result.stopped}")
    return "orbit: " + "; ".join(parts)


class OrbitAgent:
    """The paper's Orbit baseline on an OpenAI-compatible model."""

    name = "orbit"
    description = (
        "Orbit (Appendix G): persistent incidents, agenda and action ledger, a bounded JSON decision "
        "loop with a budget ladder; needs an OpenAI-compatible model (MARATHON_MODEL, "
        "OPENAI_API_KEY/OPENAI_BASE_URL held by the proxy)"
    )
    uses_models = True
    needs_ground_truth = False

    def __init__(self, settings: ModelSettings | None = None, table: RemedyTable | None = None) -> None:
        require_client_library(self.name)
        self.settings = settings  # None: MARATHON_MODEL as it is at each invocation (--marathon-model)
        self.table = table or load_table()

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None:
        try:
            return self._invoke(ctx)
        except StaleInvocation as exc:  # abandoned at its budget; a later invocation owns the state
            return InvocationUsage(detail=f"orbit: {exc}")

    def _invoke(self, ctx: InvocationContext) -> InvocationUsage:
        state = load(ctx.workspace, ctx.n)
        recovered = recover(state, ctx.tools)
        workloads = app_workloads(ctx.tools)
        green = validate_green(state, ctx.alerts)
        merge_batch(state, ctx.alerts, ctx.t, workloads)
        ensure_root_causes(state, ctx.alerts, self.table)
        mapping = state.open_incidents() + green
        publish(ctx.tools, mapping)
        promote(state.directory, green, ctx.alerts)
        state.save()

        reading = read_budget(ctx.model_base_urls)
        rung = rung_for(reading, bool(state.checkpoint.get("budget_refused")))
        result = LoopResult()
        if rung.uses_model and state.open_incidents():
            memory = {"lessons": lessons(state.directory), "recipes": recipes(state.directory)}
            client = client_for(ctx, self.settings)
            loop = DecisionLoop(ctx, state, client, rung, reading, memory)
            result = loop.run()
        if result.budget_refused:
            state.checkpoint["budget_refused"] = True
        changed = set(result.changed)
        if result.finish is not None:
            changed |= apply_finish(state, result.finish)
            append_lessons(state.directory, result.finish.lessons, ctx.n)
        changed |= ensure_root_causes(state, ctx.alerts, self.table)
        _close_dead_tasks(state)
        closing = [i for i in state.incidents if i["incident_id"] in changed]
        if closing:
            publish(ctx.tools, closing)
        state.save()
        # as the other model baselines do: a spent budget is an expected end, a broken endpoint is
        # shown as an error (after the triage and publication above, which did not need it)
        return InvocationUsage(status="error" if result.model_failed else "ok",
                               detail=_detail(rung.name, result, len(recovered), len(mapping)))


def _close_dead_tasks(state: OrbitState) -> None:
    """Tasks of closed incidents are done: the agenda holds only work that can still be done."""
    closed = {i["incident_id"] for i in state.incidents if i.get("closed")}
    for task in state.agenda:
        if task["incident"] in closed and task["state"] == "open":
            task["state"] = "done"

