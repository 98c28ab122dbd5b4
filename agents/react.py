"""The ReAct baseline (paper, Appendix G, "ReAct"), on the shared model client.

Which sentence of the paper each rule implements:

* "ReAct starts a fresh conversation at every invocation. Its first message holds the cumulative
  alert history and the incidents it opened earlier, which are the only state it keeps between
  invocations." -> a new message list per invocation (`prompts/react/`); the only state is
  `react_state.json` in the workspace: its incidents (ids, alert ids, status, root cause), kept
  in step with every report that the interface accepted.
* "Before the model runs, new alerts are filed under the first unresolved incident, so every
  alert has an incident even if the model reports none." -> alerts in no stored incident are
  appended, first fired first, to the first stored incident whose status is not `resolved` (a new
  `react-NNNN` incident when there is none) and reported before the first model call; so a model
  that is unreachable or refused (budget spent) still leaves every alert filed.
* "The model then alternates reasoning and tool calls over the full tool set of Appendix E,
  choosing every call itself, until it stops calling tools, ten steps pass, or 150k tokens are
  spent." -> every tool the interface lists is offered; a step is one model call followed by the
  tool calls it asked for, in order; the loop ends on a reply without tool calls, after
  `MAX_STEPS` steps, or before a step once `TOKEN_CEILING` tokens were used.
* "It reports incidents, root causes, and statuses through the report tool." -> the model calls
  `report_incidents` itself.

Our own choice where the paper gives none: a tool answer goes back to the model cut to
`ANSWER_CHARS` characters, so that one large read cannot spend the invocation's tokens alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pytest_marathon.agents.briefing import fill, render_alerts, render_incidents
from pytest_marathon.agents.labels import alert_id_of, alert_sort_key
from pytest_marathon.agents.llm import (
    ModelBaseline,
    ModelClient,
    ModelUnavailable,
    ToolRequest,
    function_tools,
    load_prompt,
)
from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage
from pytest_marathon.agents.tooling import call_tool, report_incidents
from pytest_marathon.agents.workspace import load_state, save_state

STATE_FILE = "react_state.json"
MAX_STEPS = 10
TOKEN_CEILING = 150_000
ANSWER_CHARS = 16_000
ROOT_CAUSE_KEYS = ("culprits", "artifact", "category", "text")


def _entry(incident: Mapping[str, Any]) -> dict[str, Any]:
    entry = {k: incident[k] for k in ("incident_id", "alert_ids", "status") if k in incident}
    if incident.get("root_cause"):
        entry["root_cause"] = incident["root_cause"]
    return entry


def file_new_alerts(state: dict[str, Any], ctx: InvocationContext) -> dict[str, Any] | None:
    """File alerts no stored incident holds under the first unresolved one; returns the incident
    that grew (None when no alert is new)."""
    held = {a for inc in state["incidents"] for a in inc["alert_ids"]}
    new = [alert_id_of(a) for a in sorted(ctx.alerts, key=alert_sort_key) if alert_id_of(a) not in held]
    if not new:
        return None
    target = next((inc for inc in state["incidents"] if inc.get("status") != "resolved"), None)
    if target is None:
        target = {"incident_id": f"react-{state['next']:04d}", "alert_ids": [], "status": "open"}
        state["next"] += 1
        state["incidents"].append(target)
    target["alert_ids"].extend(new)
    return target


def remember_report(state: dict[str, Any], reported: Any) -> None:
    """Fold an accepted `report_incidents` call into the stored incidents, as the interface
    applies it: an upsert by id, listed alerts moved from other incidents, omitted fields kept."""
    if not isinstance(reported, list):
        return
    by_id = {inc["incident_id"]: inc for inc in state["incidents"]}
    for item in reported:
        if not isinstance(item, Mapping) or not isinstance(item.get("incident_id"), str):
            continue
        stored = by_id.get(item["incident_id"])
        if stored is None:
            stored = {"incident_id": item["incident_id"], "alert_ids": [], "status": "open"}
            state["incidents"].append(stored)
            by_id[stored["incident_id"]] = stored
        if isinstance(item.get("alert_ids"), list):
            listed = [str(a) for a in item["alert_ids"]]
            for other in state["incidents"]:
                other["alert_ids"] = [a for a in other["alert_ids"] if a not in set(listed)]
            stored["alert_ids"] = listed
        if isinstance(item.get("status"), str):
            stored["status"] = item["status"]
        if isinstance(item.get("root_cause"), Mapping):
            cause = dict(stored.get("root_cause") or {})
            cause.update({k: v for k, v in item["root_cause"].items() if k in ROOT_CAUSE_KEYS})
            stored["root_cause"] = cause


class ReactAgent(ModelBaseline):
    """The paper's ReAct baseline."""

    name = "react"
    description = "ReAct (paper baseline): a fresh tool-calling conversation per invocation"

    def _invoke(self, ctx: InvocationContext, client: ModelClient) -> InvocationUsage:
        state = load_state(ctx.workspace, STATE_FILE, {"incidents": [], "next": 1})
        notes: list[str] = []
        grown = file_new_alerts(state, ctx)
        if grown is not None:
            refused = report_incidents(ctx.tools, [_entry(grown)])
            notes += [f"pre-filing under {i} refused: {error}" for i, error in refused.items()]
        save_state(ctx.workspace, STATE_FILE, state)
        if not ctx.alerts:
            return client.usage(["no alerts yet: no model call"])
        failed = self._loop(ctx, client, state, notes)
        save_state(ctx.workspace, STATE_FILE, state)
        return client.usage(notes, failed=failed)

    def _loop(self, ctx: InvocationContext, client: ModelClient, state: dict[str, Any], notes: list[str]) -> bool:
        """The reason/act loop; True when the model could not be reached for a reason other
        than the run's budget."""
        tools = function_tools(ctx)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": load_prompt("react", "system")},
            {
                "role": "user",
                "content": fill(
                    load_prompt("react", "user"),
                    n=str(ctx.n),
                    t=f"{ctx.t:g}",
                    alerts=render_alerts(ctx.alerts),
                    incidents=render_incidents(state["incidents"]),
                ),
            },
        ]
        for _ in range(MAX_STEPS):
            if client.tokens_used >= TOKEN_CEILING:
                notes.append(f"stopped at the {TOKEN_CEILING}-token ceiling")
                return False
            try:
                reply = client.complete(messages, tools)
            except ModelUnavailable as exc:
                notes.append(f"model unavailable: {exc}")
                return not exc.expected
            messages.append(reply.message)
            if not reply.tool_requests:
                return False
            for request in reply.tool_requests:
                answer = self._call(ctx, state, request)
                messages.append({"role": "tool", "tool_call_id": request.id, "content": answer})
        notes.append(f"stopped after {MAX_STEPS} steps")
        return False

    @staticmethod
    def _call(ctx: InvocationContext, state: dict[str, Any], request: ToolRequest) -> str:
        outcome = call_tool(ctx.tools, request.name, **request.arguments)
        if outcome.ok and request.name == "report_incidents":
            remember_report(state, request.arguments.get("incidents"))
        result = outcome.result if outcome.result else {"error": outcome.error}
        answer = json.dumps(result, sort_keys=True, separators=(",", ":"))
        if len(answer) > ANSWER_CHARS:
            answer = answer[:ANSWER_CHARS] + f" ... [cut: {len(answer) - ANSWER_CHARS} more characters]"
        return f"{request.note}\n{answer}" if request.note else answer
