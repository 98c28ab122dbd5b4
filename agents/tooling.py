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


def call_tool(tools: ToolClient, tool: str, /, **args: Any) -> ToolOutcome:
    """Call one tool; never raises for a failure the system reported. The tool name is
    positional-only, so a tool argument may be called `name` (get_resources)."""
    try:
        result = tools.call(tool, **args)
    except Exception as exc:  # noqa: BLE001 - any refusal is an outcome, not a crash
        return ToolOutcome(False, {}, f"{type(exc).__name__}: {exc}")
    if not isinstance(result, dict):
        return ToolOutcome(True, {"value": result})
    error = result.get("error")
    if error or result.get("ok") is False:
        return ToolOutcome(False, result, str(error or result.get("message") or "refused"))
    return ToolOutcome(True, result)


def report_incidents(tools: ToolClient, entries: list[dict[str, Any]]) -> dict[str, str]:
    """Upsert incidents; returns the error of each incident that was not stored.

    `report_incidents` is all-or-nothing, so one bad incident (say, a culprit that is not a
    workload) would drop every other; on a refused batch each incident is retried alone."""
    if not entries:
        return {}
    batch = call_tool(tools, "report_incidents", incidents=entries)
    if batch.ok:
        return {}
    if len(entries) == 1:
        return {entries[0]["incident_id"]: batch.error}
    failed = {}
    for entry in entries:
        alone = call_tool(tools, "report_incidents", incidents=[entry])
        if not alone.ok:
            failed[entry["incident_id"]] = alone.error
    return failed


def app_workloads(tools: ToolClient) -> set[str] | None:
    """The application's deployments (what a culprit may name); None if the read failed."""
    outcome = call_tool(tools, "get_resources", kind="deployments", limit=100)
    items = outcome.result.get("items") if outcome.ok else None
    if not isinstance(items, list):
        return None
    return {str(item["name"]) for item in items if isinstance(item, dict) and item.get("name")}
