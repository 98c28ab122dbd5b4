"""Reading one JSON decision of Orbit's loop, strictly.

Paper, Appendix G, Orbit: each step "expects one JSON decision: a tool_call naming an agenda task,
the incident it serves, the expected effect, and the check that will confirm it, or a finish
returning the rewritten agenda, mapping, and claims". Anything else is malformed, and the reason
is given back to the model in its one correction call; nothing of a malformed decision runs.

    {"decision": "tool_call", "task": "task-0001", "incident": "orb-0001", "tool": "get_logs",
     "arguments": {...}, "expected_effect": "...", "check": "..."}
    {"decision": "finish", "agenda": [{"task", "incident", "goal", "state"}],
     "mapping": {"orb-0001": ["<alert id>", ...]},
     "claims": [{"incident", "status", "root_cause": {"culprits", "artifact", "category", "text"}}],
     "lessons": ["..."]}
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_marathon.agents.orbit_state import OrbitState

from pytest_marathon.interface.tools import INCIDENT_STATUSES
from pytest_marathon.vocabulary import CATEGORIES

TASK_STATES = ("open", "done", "dropped")
MAX_LESSONS = 3
FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```\s*$", re.DOTALL)


class MalformedDecision(ValueError):
    """The model's answer is not one valid decision; the message says why."""


@dataclass(frozen=True)
class ToolCallDecision:
    task: str
    incident: str
    tool: str
    arguments: dict[str, Any]
    expected_effect: str
    check: str


@dataclass(frozen=True)
class FinishDecision:
    agenda: list[dict[str, Any]] = field(default_factory=list)
    mapping: dict[str, list[str]] = field(default_factory=dict)
    claims: list[dict[str, Any]] = field(default_factory=list)
    lessons: list[str] = field(default_factory=list)


Decision = ToolCallDecision | FinishDecision


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MalformedDecision(f"{what} must be a non-empty string")
    return value.strip()


def _object(text: str) -> dict[str, Any]:
    stripped = text.strip()
    fenced = FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1)
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise MalformedDecision(f"the answer is not one JSON object ({exc.msg} at char {exc.pos})") from exc
    if not isinstance(value, dict):
        raise MalformedDecision("the answer must be a JSON object")
    return value


def _incident(state: OrbitState, value: Any, what: str) -> str:
    incident_id = _text(value, what)
    incident = state.incident(incident_id)
    if incident is None or incident.get("closed"):
        open_ids = [i["incident_id"] for i in state.open_incidents()]
        raise MalformedDecision(f"{what} {incident_id!r} is not an open incident (open: {open_ids})")
    return incident_id


def _root_cause(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise MalformedDecision(f"{where}.root_cause must be an object")
    culprits = value.get("culprits", [])
    if not isinstance(culprits, list) or not all(isinstance(c, str) and c for c in culprits):
        raise MalformedDecision(f"{where}.root_cause.culprits must be a list of workload names")
    category = value.get("category")
    if category not in CATEGORIES:
        raise MalformedDecision(f"{where}.root_cause.category must be one of {', '.join(CATEGORIES)}")
    return {
        "culprits": list(culprits),
        "artifact": str(value.get("artifact") or ""),
        "category": category,
        "text": str(value.get("text") or "")[:4000],
    }


def _tool_call(data: Mapping[str, Any], state: OrbitState, allowed: Collection[str]) -> ToolCallDecision:
    task = _text(data.get("task"), "task")
    if state.task(task) is None:
        raise MalformedDecision(f"task {task!r} is not on the agenda")
    incident = _incident(state, data.get("incident"), "incident")
    tool = _text(data.get("tool"), "tool")
    if tool not in allowed:
        raise MalformedDecision(f"tool {tool!r} is not in the catalog you were given: {sorted(allowed)}")
    arguments = data.get("arguments", {})
    if not isinstance(arguments, dict):
        raise MalformedDecision("arguments must be a JSON object")
    return ToolCallDecision(
        task,
        incident,
        tool,
        dict(arguments),
        _text(data.get("expected_effect"), "expected_effect"),
        _text(data.get("check"), "check"),
    )


def _finish(data: Mapping[str, Any], state: OrbitState) -> FinishDecision:
    agenda = data.get("agenda", [])
    if not isinstance(agenda, list):
        raise MalformedDecision("agenda must be a list of tasks")
    tasks = []
    for i, item in enumerate(agenda):
        if not isinstance(item, Mapping):
            raise MalformedDecision(f"agenda[{i}] must be an object")
        task_state = item.get("state", "open")
        if task_state not in TASK_STATES:
            raise MalformedDecision(f"agenda[{i}].state must be one of {', '.join(TASK_STATES)}")
        tasks.append(
            {
                "task": item.get("task") if isinstance(item.get("task"), str) else None,
                "incident": _incident(state, item.get("incident"), f"agenda[{i}].incident"),
                "goal": _text(item.get("goal"), f"agenda[{i}].goal")[:500],
                "state": task_state,
            }
        )
    mapping = data.get("mapping", {})
    if not isinstance(mapping, Mapping):
        raise MalformedDecision("mapping must be an object of incident id -> alert ids")
    moves: dict[str, list[str]] = {}
    for incident_id, alert_ids in sorted(mapping.items()):
        _incident(state, incident_id, "mapping key")
        if not isinstance(alert_ids, list) or not all(isinstance(a, str) for a in alert_ids):
            raise MalformedDecision(f"mapping[{incident_id!r}] must be a list of alert ids")
        unknown = [a for a in alert_ids if a not in state.assigned]
        if unknown:
            raise MalformedDecision(f"mapping[{incident_id!r}] names alerts Orbit never saw: {unknown[:5]}")
        moves[incident_id] = list(alert_ids)
    claims_in = data.get("claims", [])
    if not isinstance(claims_in, list):
        raise MalformedDecision("claims must be a list")
    claims = []
    for i, claim in enumerate(claims_in):
        if not isinstance(claim, Mapping):
            raise MalformedDecision(f"claims[{i}] must be an object")
        status = claim.get("status")
        if status not in INCIDENT_STATUSES:
            raise MalformedDecision(f"claims[{i}].status must be one of {', '.join(INCIDENT_STATUSES)}")
        entry: dict[str, Any] = {"incident": _incident(state, claim.get("incident"), f"claims[{i}].incident"),
                                 "status": status}
        if claim.get("root_cause") is not None:
            entry["root_cause"] = _root_cause(claim["root_cause"], f"claims[{i}]")
        claims.append(entry)
    lessons_in = data.get("lessons", [])
    if not isinstance(lessons_in, list) or not all(isinstance(x, str) for x in lessons_in):
        raise MalformedDecision("lessons must be a list of strings")
    lessons = [x.strip()[:300] for x in lessons_in if x.strip()][:MAX_LESSONS]
    return FinishDecision(tasks, moves, claims, lessons)


def parse_decision(text: str, state: OrbitState, allowed_tools: Collection[str]) -> Decision:
    """The decision the answer holds, or MalformedDecision naming what is wrong."""
    data = _object(text)
    kind = data.get("decision")
    if kind == "tool_call":
        return _tool_call(data, state, allowed_tools)
    if kind == "finish":
        return _finish(data, state)
    raise MalformedDecision('"decision" must be "tool_call" or "finish"')
