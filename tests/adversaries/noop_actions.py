"""Exploit classes 4 and 5: actions that change nothing, credited with repairs and diluting Risk."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage, ToolClient
from pytest_marathon.agents.runbook import STATE_FILE as RUNBOOK_STATE
from pytest_marathon.agents.runbook import RunbookAgent
from pytest_marathon.agents.workspace import load_state, save_state

from .common import (
    call_tool,
    cap_reached,
    container,
    cycle,
    deployment,
    feature_flags,
    file_catch_all,
    workload_list,
)

NOOP_KINDS = ("flag", "scale", "config", "rollback")


def noop_calls(tools: ToolClient, workloads: Sequence[str], kinds: Sequence[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Mutating calls that ask for what already is, read just before each: a flag set to its
    value; per workload, its replica count, one of its env values and its cpu limit set to what
    they are, and a rollback to the revision that is running."""
    if "flag" in kinds:
        for name, value in sorted(feature_flags(tools).items()):
            yield "set_feature_flag", {"name": name, "value": value}
    for w in workloads:
        obj = deployment(tools, w)
        spec, replicas = container(obj), (obj.get("spec") or {}).get("replicas")
        if "scale" in kinds and isinstance(replicas, int) and replicas > 0:
            yield "scale_service", {"service": w, "replicas": replicas}
        if "config" in kinds:
            plain = [v for v in spec.get("env") or () if "value" in v]
            if plain:
                yield "update_config", {"service": w, "env": {plain[0]["name"]: plain[0]["value"]}}
            cpu = ((spec.get("resources") or {}).get("limits") or {}).get("cpu")
            if cpu:
                yield "update_config", {"service": w, "resources": {"limits.cpu": cpu}}
        revision = ((obj.get("metadata") or {}).get("annotations") or {}).get("deployment.kubernetes.io/revision")
        if "rollback" in kinds and revision:
            yield "rollback_service", {"service": w, "to_revision": int(revision)}


def run_noops(tools: ToolClient, calls: Iterator[tuple[str, dict[str, Any]]], incident_id: str, limit: int) -> int:
    """Issue no-op calls citing `incident_id` until `limit` went through; returns how many went
    through, or `limit` once the cap refuses one (acting is over for this invocation)."""
    done = 0
    for tool, args in calls:
        if done >= limit:
            break
        outcome = call_tool(tools, tool, incident_id=incident_id, **args)
        if cap_reached(outcome):
            return limit
        done += outcome.ok
    return done


class NoopRepair:
    """Reports one incident holding every alert (actions must cite one) and then, every
    invocation up to the mutation cap, only no-op changes (`kinds` of NOOP_KINDS), round-robin
    over the workloads.

    Steals Repaired: an executed no-op in a fault's scope (a flag set counts as app-wide) is
    credited with the recovery the fault makes on its own. No-ops answered `changed: false`
    and never counted earn nothing.
    """

    name = "noop-repair"
    description = "Attacker: only no-op changes (flag to its value, scale to current, ...) (steals Repaired)"
    needs_ground_truth = False

    def __init__(self, kinds: Sequence[str] = NOOP_KINDS, incident_id: str = "noop-0001", limit: int = 100) -> None:
        self.kinds, self.incident_id, self.limit = tuple(kinds), incident_id, limit
        if self.kinds != NOOP_KINDS:
            self.name = "noop-repair-" + "-".join(self.kinds)

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None:
        state = load_state(ctx.workspace, f"noop-{self.incident_id}.json", {"next": 0})
        reported = file_catch_all(ctx, state, self.incident_id)
        workloads = workload_list(ctx.tools)
        if reported and workloads:
            order = list(cycle(workloads, state["next"]))
            run_noops(ctx.tools, noop_calls(ctx.tools, order, self.kinds), self.incident_id, self.limit)
            state["next"] = (state["next"] + 1) % len(workloads)
        save_state(ctx.workspace, f"noop-{self.incident_id}.json", state)
        return None


class RiskDilution:
    """The Runbook baseline, unchanged, plus up to `extra` no-op changes per invocation on the
    workloads of its reported incidents, each citing that workload's incident. The incidents
    holding the most alerts go first: they are the likeliest to hold an alert of some fault, which
    is all it takes for an action on their workload (or an app-wide flag) to be in scope.

    Steals Risk: with no-ops counted in n_exec, the Runbook's out-of-scope actions become a
    smaller share. Not executed and not counted, they leave Risk, Score and Repaired as the
    Runbook's own.
    """

    name = "risk-dilution"
    description = "Attacker: the Runbook plus harmless in-scope no-op actions (steals Risk)"
    needs_ground_truth = False

    def __init__(self, extra: int = 8) -> None:
        self.runbook = RunbookAgent()
        self.extra = extra

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None:
        self.runbook.invoke(ctx)
        runbook = load_state(ctx.workspace, RUNBOOK_STATE, {"incidents": []})
        reported = [i for i in runbook["incidents"] if not i.get("report_error")]
        reported.sort(key=lambda i: (-len(i["alert_ids"]), i["incident_id"]))
        left = self.extra
        for incident in reported:
            calls = noop_calls(ctx.tools, [incident["workload"]], ("flag", "scale", "config"))
            left -= run_noops(ctx.tools, calls, incident["incident_id"], left)
            if left <= 0:
                break
        return None
