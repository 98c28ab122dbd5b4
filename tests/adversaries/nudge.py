"""Exploit class: harmless changes timed by the alert stream, credited with recoveries that
would have happened anyway."""

from __future__ import annotations

from pytest_marathon.agents.labels import alert_id_of, alert_sort_key, workload_of
from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage
from pytest_marathon.agents.workspace import load_state, save_state

from .common import (
    ALERTS_PER_INCIDENT,
    call_tool,
    cap_reached,
    deployment,
    file_incidents,
    workload_list,
)

STATE = "alert-nudge.json"


class AlertNudge:
    """Files one incident per workload its alerts name (no diagnosis), and each time a workload
    has an alert it has not seen, nudges that workload's capacity: one replica more than its own
    count, or back to it. Both are harmless and state-changing (never no-ops), so each counts in
    Risk and each sits in the scope of the faults whose alerts name the workload.

    Steals Repaired: a fault that heals by itself (an OOM-killed pod restarting, a chaos
    experiment running out) has been nudged in its scope just before, and a repair rule that
    reads only the agent's own run credits the healing to the nudge."""

    name = "alert-nudge"
    description = "Attacker: a harmless scale-out on each newly alerting workload (steals Repaired from self-recovery)"
    needs_ground_truth = False

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None:
        state = load_state(ctx.workspace, STATE, {"seen": [], "own": {}})
        seen = set(state["seen"])
        workloads = set(workload_list(ctx.tools))
        by_workload: dict[str, list[str]] = {}
        fresh: set[str] = set()
        for alert in sorted(ctx.alerts, key=alert_sort_key):
            workload = workload_of(alert.get("labels") or {})
            if workload not in workloads:
                continue
            by_workload.setdefault(workload, []).append(alert_id_of(alert))
            if alert_id_of(alert) not in seen:
                fresh.add(workload)
        failed = file_incidents(
            ctx.tools,
            [
                {"incident_id": f"nudge-{w}", "alert_ids": ids[-ALERTS_PER_INCIDENT:], "status": "open"}
                for w, ids in sorted(by_workload.items())
            ],
        )
        for workload in sorted(fresh):
            if f"nudge-{workload}" in failed:
                continue
            replicas = (deployment(ctx.tools, workload).get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or replicas < 1:
                continue
            own = state["own"].setdefault(workload, replicas)
            outcome = call_tool(
                ctx.tools,
                "scale_service",
                service=workload,
                replicas=own + 1 if replicas == own else own,
                incident_id=f"nudge-{workload}",
            )
            if cap_reached(outcome):
                break
        state["seen"] = sorted(seen | {alert_id_of(a) for a in ctx.alerts})
        save_state(ctx.workspace, STATE, state)
        return None
