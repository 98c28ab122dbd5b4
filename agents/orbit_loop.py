"""Orbit's bounded decision loop: one JSON decision per step, executed by the code.

Paper, Appendix G, Orbit: "Each step sends a fixed operating charter, the state, the last
observations, the tool catalog, and the remaining budget, and expects one JSON decision [...]. A
malformed decision gets one correction call, and a second failure ends the invocation as a charged
no-op. Ten steps, a token ceiling, and a mutation cap bound the loop".

* Each step is one self-contained request (system: the charter of `prompts/orbit/charter.md`;
  user: a JSON document with the state, the last `OBSERVATIONS` observations, the tool catalog and
  the budget: steps, tokens and mutations left, and the run's dollars as the proxy reports them at
  that step), so a step costs the same whatever came before, and nothing in it depends on the
  wall clock: the same answers give the same requests and the same tool calls.
* The steps, mutations and subagent permission come from the budget ladder's rung
  (`orbit_budget`); the token ceiling is `TOKEN_CEILING` per invocation (the paper's value for
  ReAct and the CLI agents, 150k, so the agents are bounded alike).
* A malformed decision gets one correction call (the bad answer and the reason); if that answer is
  malformed too, the loop ends, nothing of either runs, and the invocation returns as a no-op (its
  model calls are charged by the proxy like any other).
* The main loop's catalog leaves out the code-change tools; `source_fix` hands an incident to the
  subagent (`orbit_subagent`). A `report_incidents` call of the model may name only Orbit's own
  incidents and sets their status and root cause (an incident whose root cause the model reported
  is *diagnosed*); alert sets stay the code's, moved only through `finish`'s mapping.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_marathon.agents.labels import alert_id_of
from pytest_marathon.agents.llm import ModelClient, ModelUnavailable, load_prompt
from pytest_marathon.agents.orbit_actions import is_act, run_action
from pytest_marathon.agents.orbit_budget import BudgetReading, Rung, read_budget
from pytest_marathon.agents.orbit_decisions import (
    FinishDecision,
    MalformedDecision,
    ToolCallDecision,
    parse_decision,
)
from pytest_marathon.agents.orbit_state import OrbitState
from pytest_marathon.agents.orbit_subagent import SOURCE_TOOLS, diagnosed_for, run_subagent
from pytest_marathon.agents.protocol import InvocationContext
from pytest_marathon.agents.tooling import call_tool

from pytest_marathon.interface.tools import MUTATING_TOOLS, TOOLS_BY_NAME

TOKEN_CEILING = 150_000
OBSERVATIONS = 4
ANSWER_CHARS = 2000
ALERTS_SHOWN = 12
MAX_OUTPUT_TOKENS = 2000
#: Stop starting steps this close to the deadline, so the closing publication still fits. A guard
#: against the runner's timeout only: it decides nothing while the loop has time.
DEADLINE_GUARD_S = 8.0
SOURCE_FIX = {
    "name": "source_fix",
    "kind": "handoff",
    "description": "Hand a diagnosed incident to the source-fix subagent, which reads and patches "
    "one service's code. Once per wake-up; the incident's reported root cause must name the service.",
    "parameters": {"service": "string (required)", "hypothesis": "string (required)"},
}


@dataclass
class LoopResult:
    steps: int = 0
    finish: FinishDecision | None = None
    no_op: str = ""  # why the loop ended as a no-op (two malformed decisions)
    stopped: str = ""  # what bound or failure ended it otherwise
    budget_refused: bool = False
    model_failed: bool = False  # unreachable for another reason than the budget
    mutations: int = 0
    changed: set[str] = field(default_factory=set)


def catalog(ctx: InvocationContext, rung: Rung) -> list[dict[str, Any]]:
    """The tools the main loop may name: the session's listing minus the code-change tools, minus
    every act tool when the rung allows no mutation, plus the subagent hand-off."""
    entries = []
    for listing in ctx.tools.list_tools():
        name = str(listing.get("name", ""))
        spec = TOOLS_BY_NAME.get(name)
        if spec is None or name in SOURCE_TOOLS[1:]:
            continue
        if spec.kind == "act" and rung.mutations == 0:
            continue
        schema = listing.get("inputSchema") or {}
        required = set(schema.get("required") or [])
        parameters = {
            key: f"{value.get('type', 'any')}{' (required)' if key in required else ''}"
            for key, value in sorted((schema.get("properties") or {}).items())
        }
        entries.append({"name": name, "kind": spec.kind, "description": str(listing.get("description", "")),
                        "parameters": parameters})
    if rung.subagent:
        entries.append(SOURCE_FIX)
    return entries


def _alert_view(alert: Mapping[str, Any]) -> dict[str, Any]:
    return {k: alert.get(k) for k in ("alert_id", "alertname", "state", "labels", "fired_at", "resolved_at")}


class DecisionLoop:
    """One invocation's loop; `run()` returns what happened, never raises for a model failure."""

    def __init__(
        self,
        ctx: InvocationContext,
        state: OrbitState,
        client: ModelClient,
        rung: Rung,
        reading: BudgetReading | None,
        memory: Mapping[str, Any],
    ) -> None:
        self.ctx, self.state, self.client, self.rung = ctx, state, client, rung
        self.reading = reading
        self.memory = memory
        self.catalog = catalog(ctx, rung)
        self.allowed = {entry["name"] for entry in self.catalog}
        self.observations: list[dict[str, Any]] = []
        self.result = LoopResult()
        self.subagent_used = False
        self.charter = load_prompt("orbit", "charter")
        self.alerts = {alert_id_of(a): a for a in ctx.alerts}

    # the step's request -----------------------------------------------------------------------
    def document(self, step: int) -> dict[str, Any]:
        open_incidents = []
        for incident in self.state.open_incidents():
            ids = incident["alert_ids"]
            firing = [a for a in ids if self.alerts.get(a, {}).get("state") == "firing"]
            open_incidents.append({
                "incident_id": incident["incident_id"],
                "signal": incident["signal"],
                "status": incident["status"],
                "root_cause": incident.get("root_cause"),
                "diagnosed": bool(incident.get("diagnosed")),
                "alerts_total": len(ids),
                "alerts_firing": len(firing),
                "alerts": [_alert_view(self.alerts[a]) for a in ids[-ALERTS_SHOWN:] if a in self.alerts],
                "actions": incident.get("actions", [])[-5:],
            })
        agenda = [t for t in self.state.agenda if t["state"] == "open"]
        return {
            "wake_up": {"invocation": self.ctx.n, "virtual_time_s": self.ctx.t},
            "state": {"open_incidents": open_incidents, "agenda": agenda},
            "memory": dict(self.memory),
            "last_observations": self.observations[-OBSERVATIONS:],
            "tool_catalog": self.catalog,
            "budget": {
                "rung": self.rung.name,
                "step": step,
                "steps_left": self.rung.steps - step + 1,
                "tokens_left": max(0, TOKEN_CEILING - self.client.tokens_used),
                "mutations_left": max(0, self.rung.mutations - self.result.mutations),
                "source_fix_available": self.rung.subagent and not self.subagent_used,
                **self._dollars(step),
            },
        }

    def _dollars(self, step: int) -> dict[str, Any]:
        """The run's dollars as the proxy reports them now (spent by earlier steps included)."""
        if step > 1 and self.reading is not None:
            self.reading = read_budget(self.ctx.model_base_urls) or self.reading
        return self.reading.as_prompt() if self.reading is not None else {"run_budget_usd": "unknown"}

    def _messages(self, step: int) -> list[dict[str, Any]]:
        return [
            {"role": "system", "content": self.charter},
            {"role": "user", "content": json.dumps(self.document(step), sort_keys=True)},
        ]

    # the loop ---------------------------------------------------------------------------------
    def run(self) -> LoopResult:
        for step in range(1, self.rung.steps + 1):
            if self.client.tokens_used >= TOKEN_CEILING:
                self.result.stopped = "token ceiling"
                break
            if self.ctx.deadline - time.monotonic() < DEADLINE_GUARD_S:
                self.result.stopped = "deadline"
                break
            try:
                decision = self._decide(step)
            except ModelUnavailable as exc:
                self._unavailable(exc, "")
                break
            self.result.steps = step
            if decision is None:
                break  # no_op set
            if isinstance(decision, FinishDecision):
                self.result.finish = decision
                break
            try:
                self._execute(decision)
            except ModelUnavailable as exc:
                self._unavailable(exc, " in the subagent")
                break
        else:
            self.result.stopped = "step limit"
        return self.result

    def _unavailable(self, exc: ModelUnavailable, where: str) -> None:
        self.result.budget_refused = exc.budget_spent
        self.result.model_failed = not self.result.budget_refused
        self.result.stopped = f"model unavailable{where}: {exc}"[:300]

    def _decide(self, step: int) -> ToolCallDecision | FinishDecision | None:
        messages = self._messages(step)
        reply = self.client.complete(messages, json_object=True, max_output_tokens=MAX_OUTPUT_TOKENS)
        try:
            return parse_decision(reply.text, self.state, self.allowed)
        except MalformedDecision as first:
            correction = load_prompt("orbit", "correction").replace("{reason}", str(first))
            messages += [{"role": "assistant", "content": reply.text}, {"role": "user", "content": correction}]
            again = self.client.complete(messages, json_object=True, max_output_tokens=MAX_OUTPUT_TOKENS)
            try:
                return parse_decision(again.text, self.state, self.allowed)
            except MalformedDecision as second:
                self.result.no_op = f"malformed decision twice at step {step}: {first}; then: {second}"[:400]
                return None

    # executing a tool_call --------------------------------------------------------------------
    def _observe(self, decision: ToolCallDecision, answer: Mapping[str, Any], ok: bool) -> None:
        self.observations.append({
            "tool": decision.tool, "incident": decision.incident, "task": decision.task, "ok": ok,
            "expected_effect": decision.expected_effect, "check": decision.check,
            "answer": json.dumps(answer, sort_keys=True)[:ANSWER_CHARS],
        })

    def may_mutate(self) -> bool:
        if self.result.mutations >= self.rung.mutations:
            return False
        self.result.mutations += 1
        return True

    def _execute(self, decision: ToolCallDecision) -> None:
        tool, arguments = decision.tool, dict(decision.arguments)
        if tool == "source_fix":
            self._hand_off(decision)
            return
        if tool == "report_incidents":
            self._report(decision, arguments)
            return
        if not is_act(tool):
            outcome = call_tool(self.ctx.tools, tool, **arguments)
            self._observe(decision, outcome.result if outcome.ok else {"error": outcome.error}, outcome.ok)
            return
        if tool in MUTATING_TOOLS and not self.may_mutate():
            self._observe(decision, {"error": "refused by Orbit: the mutation cap of this wake-up is reached"}, False)
            return
        arguments["incident_id"] = decision.incident  # an action serves the incident it names
        outcome = run_action(self.state, self.ctx.tools, tool, arguments, decision.incident, decision.task)
        self.result.changed.add(decision.incident)
        self._observe(decision, outcome.result if outcome.ok else {"error": outcome.error}, outcome.ok)

    def _report(self, decision: ToolCallDecision, arguments: dict[str, Any]) -> None:
        entries = arguments.get("incidents")
        known = {i["incident_id"] for i in self.state.incidents}
        if not isinstance(entries, list) or not all(
            isinstance(e, Mapping) and e.get("incident_id") in known for e in entries
        ):
            self._observe(decision, {"error": f"report only Orbit's own incidents: {sorted(known)}"}, False)
            return
        # the mapping is the code's (moves come through `finish`): alert sets are kept as they are
        entries = [{k: v for k, v in e.items() if k != "alert_ids"} for e in entries]
        outcome = call_tool(self.ctx.tools, "report_incidents", incidents=entries)
        if outcome.ok:
            for entry in entries:
                self._mirror(entry)
        self._observe(decision, outcome.result if outcome.ok else {"error": outcome.error}, outcome.ok)

    def _mirror(self, entry: Mapping[str, Any]) -> None:
        """Keep Orbit's state equal to what the report tool now holds for this incident."""
        incident = self.state.incident(str(entry["incident_id"]))
        if incident is None:
            return
        if entry.get("status") in {"open", "mitigated", "resolved"}:
            incident["status"] = entry["status"]
        cause = entry.get("root_cause")
        if isinstance(cause, Mapping) and cause:
            merged = {**(incident.get("root_cause") or {}), **{k: v for k, v in cause.items()}}
            incident["root_cause"], incident["diagnosed"] = merged, True
        self.result.changed.add(incident["incident_id"])

    def _hand_off(self, decision: ToolCallDecision) -> None:
        service = decision.arguments.get("service")
        hypothesis = decision.arguments.get("hypothesis")
        incident = self.state.incident(decision.incident) or {}
        refusal = None
        if not self.rung.subagent or self.subagent_used:
            refusal = "the source-fix subagent is not available (once per wake-up, and not on this budget rung)"
        elif not isinstance(service, str) or not isinstance(hypothesis, str) or not hypothesis.strip():
            refusal = "source_fix needs `service` and `hypothesis` strings"
        elif not diagnosed_for(incident, service):
            refusal = f"incident {decision.incident} is not diagnosed with {service!r} among its culprits"
        if refusal is not None:
            self._observe(decision, {"error": refusal}, False)
            return
        self.subagent_used = True
        report = run_subagent(self.client, self.ctx, self.state, incident, str(service), str(hypothesis),
                              decision.task, self.may_mutate, TOKEN_CEILING)
        self.result.changed.add(decision.incident)
        self._observe(decision, report.observation(), report.submitted)


def move_alerts(state: OrbitState, incident_id: str, alert_ids: Sequence[str]) -> set[str]:
    """Place alerts under one open incident, taking them from the others; returns the incidents
    that changed."""
    target = state.incident(incident_id)
    if target is None:
        return set()
    changed = {incident_id}
    wanted = [a for a in alert_ids if a in state.assigned]
    for incident in state.incidents:
        if incident is target:
            continue
        kept = [a for a in incident["alert_ids"] if a not in wanted]
        if kept != incident["alert_ids"]:
            incident["alert_ids"] = kept
            changed.add(incident["incident_id"])
    target["alert_ids"] = [a for a in target["alert_ids"] if a not in wanted] + wanted
    for alert_id in wanted:
        state.assigned[alert_id] = incident_id
    return changed
