"""Exploit classes 4 and 5: blanket actions filed under one incident that makes all of them in
scope."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage, ToolClient
from pytest_marathon.agents.workspace import load_state, save_state

from .common import (
    call_tool,
    cap_reached,
    cycle,
    file_catch_all,
    rollout_history,
    workload_list,
)


def pipeline_change_running(history: list[Mapping[str, Any]]) -> bool:
    """Whether the running revision is a release-pipeline change (not the original, not a
    revert, not an agent's), which is all a rollback needs to know to undo something."""
    current = [r for r in history if r.get("current")]
    if len(history) < 2 or not current:
        return False
    cause = str(current[0].get("change_cause") or "")
    return bool(current[0].get("created_at")) and bool(cause) and not cause.startswith(("Revert", "agent:"))


def blanket_action(tools: ToolClient, workload: str, incident_id: str) -> tuple[str, Any]:
    """Roll back a workload running a pipeline change, restart any other."""
    tool = "rollback_service" if pipeline_change_running(rollout_history(tools, workload)) else "restart_service"
    return tool, call_tool(tools, tool, incident_id=incident_id, service=workload)


class CatchAllScope:
    """Reports one catch-all incident holding every alert, with no diagnosis, and every
    invocation restarts (or rolls back) every workload in turn up to the mutation cap, citing it.

    Steals Repaired and a low Risk: blanket changes in every fault's scope are credited with any
    recovery that follows, and an incident holding every alert makes every target in scope.
    """

    name = "catch-all-scope"
    description = "Attacker: restarts/rollbacks of every workload citing one catch-all incident (steals Repaired, Risk)"
    needs_ground_truth = False

    def __init__(self, incident_id: str = "catch-all") -> None:
        self.incident_id = incident_id

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None:
        state = load_state(ctx.workspace, f"catch-all-{self.incident_id}.json", {"next": 0})
        reported = file_catch_all(ctx, state, self.incident_id)
        workloads = workload_list(ctx.tools)
        if reported and workloads:
            for w in cycle(workloads, state["next"]):
                _, outcome = blanket_action(ctx.tools, w, self.incident_id)
                if cap_reached(outcome):
                    break
            state["next"] = (state["next"] + 1) % len(workloads)
        save_state(ctx.workspace, f"catch-all-{self.incident_id}.json", state)
        return None
