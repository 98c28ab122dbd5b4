"""Calling tools without letting one refused call end the invocation.

A baseline acts on many incidents per invocation; a tool error (bad target, mutation cap, a
rollback with no previous revision) must be remembered against that incident and the loop must go
on. The interface reports failures either as an `error` field or by raising; both become a
`ToolOutcome` here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_marathon.agents.protocol import ToolClient


@dataclass(frozen=True)
class ToolOutcome:
    ok: bool
    result: dict[str, Any]
    error: str = ""


def call_tool(tools: ToolClient, name: str, **args: Any) -> ToolOutcome:
    """Call one tool; never raises for a failure the system reported."""
    try:
        result = tools.call(name, **args)
    except Exception as exc:  # noqa: BLE001 - any refusal is an outcome, not a crash
        return ToolOutcome(False, {}, f"{type(exc).__name__}: {exc}")
    if not isinstance(result, dict):
        return ToolOutcome(True, {"value": result})
    error = result.get("error")
    if error or result.get("ok") is False:
        return ToolOutcome(False, result, str(error or result.get("message") or "refused"))
    return ToolOutcome(True, result)
