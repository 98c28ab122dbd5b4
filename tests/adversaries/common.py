"""What every attacker shares: reading the tools the way any agent may, and filing in bulk.

Attackers use only the agent's tools and the public run shape (scenario length and Δ, never the
schedule), so what they score is what any third-party agent could score. They remember what they
need in their workspace, as the baselines do, because an invocation may be a fresh process.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pytest_marathon.agents.labels import alert_id_of, alert_sort_key
from pytest_marathon.agents.protocol import InvocationContext, ToolClient
from pytest_marathon.agents.tooling import ToolOutcome, app_workloads, call_tool, report_incidents

#: The schema's caps on one `report_incidents` call and on one incident's alert list.
INCIDENTS_PER_CALL = 50
ALERTS_PER_INCIDENT = 1000

__all__ = [
    "ALERTS_PER_INCIDENT",
    "alert_id_of",
    "all_alert_ids",
    "app_workloads",
    "call_tool",
    "cap_reached",
    "container",
    "cycle",
    "deployment",
    "due",
    "feature_flags",
    "file_catch_all",
    "file_incidents",
    "rollout_history",
    "workload_list",
]


def all_alert_ids(ctx: InvocationContext) -> list[str]:
    """Every alert of the cumulative history, oldest first, cut to what one incident may hold
    (the newest are kept: they are the ones a late report can still be matched on)."""
    ids = [alert_id_of(a) for a in sorted(ctx.alerts, key=alert_sort_key)]
    return ids[-ALERTS_PER_INCIDENT:]


def workload_list(tools: ToolClient) -> list[str]:
    """The application's deployments in a fixed order (what culprits and targets may name)."""
    return sorted(app_workloads(tools) or ())


def file_incidents(tools: ToolClient, entries: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Upsert any number of incidents, `INCIDENTS_PER_CALL` per call; the errors of those not
    stored (the baseline helper retries a refused batch one incident at a time)."""
    failed: dict[str, str] = {}
    for start in range(0, len(entries), INCIDENTS_PER_CALL):
        failed.update(report_incidents(tools, list(entries[start : start + INCIDENTS_PER_CALL])))
    return failed


def deployment(tools: ToolClient, workload: str) -> dict[str, Any]:
    """The full Deployment object as get_resources returns it ({} when the read failed)."""
    outcome = call_tool(tools, "get_resources", kind="deployments", name=workload)
    obj = outcome.result.get("object") if outcome.ok else None
    return obj if isinstance(obj, dict) else {}


def container(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The first container of a Deployment's pod template ({} when absent)."""
    spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    containers = spec.get("containers") or [{}]
    return containers[0] if isinstance(containers[0], dict) else {}


def feature_flags(tools: ToolClient) -> dict[str, str]:
    """The `feature-flags` configmap's data (what set_feature_flag accepts)."""
    outcome = call_tool(tools, "get_resources", kind="configmaps", name="feature-flags")
    data = ((outcome.result.get("object") or {}).get("data") or {}) if outcome.ok else {}
    return {str(k): str(v) for k, v in data.items()}


def rollout_history(tools: ToolClient, workload: str) -> list[dict[str, Any]]:
    """A deployment's revisions, oldest first ([] when the read failed)."""
    outcome = call_tool(tools, "get_rollout_history", service=workload)
    revisions = outcome.result.get("revisions") if outcome.ok else None
    return [r for r in revisions or () if isinstance(r, dict)]


def cap_reached(outcome: ToolOutcome) -> bool:
    """Whether a mutating call was refused by the per-invocation cap: acting is over for now."""
    return outcome.result.get("verdict") == "refused" and "cap" in outcome.error


def due(ctx: InvocationContext, file_at: float, state: dict[str, Any]) -> list[str] | None:
    """The alert ids to file now, or None: nothing before `file_at`, and nothing again while the
    alert history is what was filed last time (a late attacker files once, at the end)."""
    if ctx.t < file_at:
        return None
    ids = all_alert_ids(ctx)
    if not ids or ids == state.get("filed_ids"):
        return None
    state["filed_ids"] = ids
    return ids


def file_catch_all(ctx: InvocationContext, state: dict[str, Any], incident_id: str) -> bool:
    """Keep one incident holding every alert so far (filed at once, even empty, so actions can
    cite it); returns whether it has been reported."""
    ids = due(ctx, 0.0, state)
    if ids is not None or not state.get("reported"):
        failed = file_incidents(ctx.tools, [{"incident_id": incident_id, "alert_ids": ids or [], "status": "open"}])
        state["reported"] = state.get("reported") or not failed
    return bool(state["reported"])


def cycle(items: Sequence[str], start: int) -> Iterator[str]:
    """Every item once, starting at position `start` (round-robin across invocations)."""
    for k in range(len(items)):
        yield items[(start + k) % len(items)]
