"""Orbit's source-fix subagent: one narrow conversation bound to one incident and one service.

Paper, Appendix G, Orbit: "Source-level fixes happen only in one subagent bound to a diagnosed
incident and service." The main loop never sees the code-change tools (Appendix E: propose_patch,
build_service_image, submit_patch). It can only hand an incident over, at most once per invocation,
and only when that incident is diagnosed (a root cause the model reported, not the tentative one)
and the service is among its culprits. The subagent then runs its own conversation with the
service's source tools as functions whose `service` and `incident_id` are fixed by the code
(removed from the schemas the model sees, and overwritten on every call), for at most `MAX_STEPS`
model calls. Its act calls go through the same write-ahead ledger and mutation cap as the loop's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_marathon.agents.llm import ModelClient, function_tools, load_prompt
from pytest_marathon.agents.orbit_actions import is_act, run_action
from pytest_marathon.agents.orbit_state import OrbitState
from pytest_marathon.agents.protocol import InvocationContext
from pytest_marathon.agents.tooling import call_tool

from pytest_marathon.interface.tools import MUTATING_TOOLS

SOURCE_TOOLS = ("get_source", "propose_patch", "build_service_image", "submit_patch")
BOUND_ARGUMENTS = ("service", "incident_id", "namespace")
MAX_STEPS = 6
ANSWER_CHARS = 6000


def diagnosed_for(incident: Mapping[str, Any], service: str) -> bool:
    cause = incident.get("root_cause") or {}
    return bool(incident.get("diagnosed")) and service in (cause.get("culprits") or [])


def narrowed_tools(ctx: InvocationContext) -> list[dict[str, Any]]:
    """The source tools with the bound arguments taken out of their schemas."""
    tools = []
    for tool in function_tools(ctx, SOURCE_TOOLS):
        parameters = json.loads(json.dumps(tool["function"]["parameters"]))
        for name in BOUND_ARGUMENTS:
            parameters.get("properties", {}).pop(name, None)
        if "required" in parameters:
            parameters["required"] = [r for r in parameters["required"] if r not in BOUND_ARGUMENTS]
        tools.append({**tool, "function": {**tool["function"], "parameters": parameters}})
    return tools


@dataclass
class SubagentReport:
    service: str
    steps: int = 0
    submitted: bool = False
    summary: str = ""

    def observation(self) -> dict[str, Any]:
        return {"tool": "source_fix", "service": self.service, "steps": self.steps,
                "submitted": self.submitted, "summary": self.summary[:1500]}


def run_subagent(
    client: ModelClient,
    ctx: InvocationContext,
    state: OrbitState,
    incident: Mapping[str, Any],
    service: str,
    hypothesis: str,
    task: str,
    may_mutate: Callable[[], bool],
    token_ceiling: int,
) -> SubagentReport:
    """Run the bound conversation; ModelUnavailable propagates to the loop, which degrades."""
    report = SubagentReport(service)
    brief = {
        "incident": incident["incident_id"],
        "service": service,
        "root_cause": incident.get("root_cause"),
        "hypothesis": hypothesis,
    }
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": load_prompt("orbit", "subagent")},
        {"role": "user", "content": json.dumps(brief, sort_keys=True)},
    ]
    tools = narrowed_tools(ctx)
    for _ in range(MAX_STEPS):
        if client.tokens_used >= token_ceiling:
            report.summary = report.summary or "stopped at the token ceiling"
            break
        reply = client.complete(messages, tools)
        report.steps += 1
        messages.append(reply.message)
        if not reply.tool_requests:
            report.summary = reply.text
            break
        for request in reply.tool_requests:
            answer = _call(ctx, state, incident["incident_id"], service, task, request.name,
                           request.arguments, may_mutate)
            if request.name == "submit_patch" and answer.get("ok") is True and answer.get("changed") is not False:
                report.submitted = True
            messages.append({"role": "tool", "tool_call_id": request.id,
                             "content": json.dumps(answer, sort_keys=True)[:ANSWER_CHARS]})
        if report.submitted:
            report.summary = "patch submitted"
            break
    return report


def _call(
    ctx: InvocationContext,
    state: OrbitState,
    incident_id: str,
    service: str,
    task: str,
    tool: str,
    arguments: Mapping[str, Any],
    may_mutate: Callable[[], bool],
) -> dict[str, Any]:
    if tool not in SOURCE_TOOLS:
        return {"ok": False, "error": f"{tool!r} is not one of this subagent's tools: {', '.join(SOURCE_TOOLS)}"}
    bound = {k: v for k, v in sorted(arguments.items()) if k not in BOUND_ARGUMENTS}
    bound["service"] = service
    if not is_act(tool):
        outcome = call_tool(ctx.tools, tool, **bound)
        return outcome.result if outcome.ok else {"ok": False, "error": outcome.error}
    if tool in MUTATING_TOOLS and not may_mutate():
        return {"ok": False, "error": "refused by Orbit: this invocation's mutation cap is reached"}
    bound["incident_id"] = incident_id
    outcome = run_action(state, ctx.tools, tool, bound, incident_id, task)
    return outcome.result if outcome.ok else {"ok": False, "error": outcome.error}
