"""An episode played by one of the marathon's program agents (`codex`, `claude-code`,
`cmd:<command line>`) over MCP.

The agent is the marathon's own (`pytest_marathon.agents.resolve_agent`), invoked as the marathon
runner invokes it: a private workspace, the run's sandbox (`RunIsolation`), the metering proxy's
base URLs, the MCP endpoint in `ctx.mcp_url`, one wall-clock budget enforced by killing its
process group. What differs is what it is told and what it may call: `ctx.brief` carries the
task description and the API list (AIOpsLab's prompt), and the endpoint serves the episode's ACI
(`mcp_tools.EpisodeTools`) instead of the marathon's tools. The episode is one invocation: the
agent works until it submits, reaches the step limit or runs out of time.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pytest_marathon.episodic.mcp_tools import EpisodeMCPServer, EpisodeTools
from pytest_marathon.episodic.problems import Problem

#: the wall-clock budget of an episode's one invocation (the marathon gives 110 s per invocation;
#: an episode is up to DEFAULT_MAX_STEPS tool calls in one go)
EPISODE_BUDGET_S = 900.0
PROMPT = ("Solve the task in your instructions with the tools of the `{server}` MCP server, one tool call "
          "at a time, and end by calling `submit` with your answer.")


def task_brief(problem: Problem, namespace: str, workloads: list[str], documentation: str,
               max_steps: int) -> Any:
    """AIOpsLab's prompt (task description, then the APIs), the APIs being MCP tools here."""
    from pytest_marathon.agents import TaskBrief
    from pytest_marathon.agents.external import MCP_SERVER_NAME
    from pytest_marathon.episodic.session import task_description

    rules = "\n".join((
        task_description(problem, namespace, workloads), "",
        f"The APIs are the tools of the `{MCP_SERVER_NAME}` MCP server (each call is one step; at most "
        f"{max_steps} steps):", documentation, "",
        "Call one tool at a time. `submit` ends the episode: call it once, with your answer."))
    return TaskBrief(rules, PROMPT.format(server=MCP_SERVER_NAME))


class _NoTools:
    """The in-process client slot of the context: a program agent reaches the tools over MCP."""

    def call(self, tool: str, /, **args: Any) -> dict[str, Any]:
        return {"error": f"{tool}: an episode's tools are served over MCP only"}

    def list_tools(self) -> list[dict[str, Any]]:
        return []


class ExternalEpisode:
    """`run_problem`'s play step for a program agent; built before the bundle opens so that a
    missing CLI or credential stops the episode before anything is recorded."""

    def __init__(self, problem: Problem, spec: str, seed: int, max_steps: int, max_cost_usd: float | None,
                 hidden: tuple[Path, ...], budget_s: float = EPISODE_BUDGET_S) -> None:
        from pytest_marathon.agents import resolve_agent
        from pytest_marathon.isolation.levels import isolation_level

        self.problem = problem
        self.spec = spec
        self.seed = seed
        self.max_steps = max_steps
        self.max_cost_usd = max_cost_usd
        self.hidden = hidden
        self.budget_s = budget_s
        self.agent = resolve_agent(spec)
        self.isolation = isolation_level(self.agent)

    def __call__(self, recorder: Any, scratch: Path) -> list[dict[str, Any]]:
        import shutil

        from pytest_marathon.isolation.levels import RunIsolation
        from pytest_marathon.runner import _private_workspace

        meter = self._meter()
        workspace = _private_workspace()
        isolation = RunIsolation(self.agent, workspace, self.hidden)
        try:
            return self._play(recorder, scratch, meter, workspace, isolation)
        finally:
            isolation.close()
            if meter is not None:
                meter.close()
            shutil.rmtree(workspace, ignore_errors=True)

    def _meter(self) -> Any:
        from pytest_marathon.metering.runs import uses_models

        if not uses_models(self.agent):
            return None
        from pytest_marathon.metering.prices import load_price_table
        from pytest_marathon.metering.proxy import MeteringProxy

        return MeteringProxy(load_price_table(None), self.max_cost_usd)

    def _play(self, recorder: Any, scratch: Path, meter: Any, workspace: Path, isolation: Any) -> list[dict[str, Any]]:
        from pytest_marathon.agents import InvocationContext
        from pytest_marathon.episodic.session import NO_USAGE, episode_world
        from pytest_marathon.interface.mcp_server import HttpServer
        from pytest_marathon.run.invoke import call_with_budget

        def usage(step: int) -> dict[str, Any]:
            """The proxy's window up to this call; the next one opens for the next step."""
            if meter is None:
                return dict(NO_USAGE)
            fields = meter.end_invocation().record_fields()
            meter.begin_invocation(step + 1)
            return dict(fields)

        with episode_world(self.problem, self.seed, scratch, recorder) as world:
            backend = world.backend
            tools = EpisodeTools(world.aci, self.problem.task, recorder, self.max_steps, advance=world.step,
                                 now=lambda: float(backend.now), usage=usage)
            brief = task_brief(self.problem, backend.namespace, world.workloads,
                               world.aci.documentation(self.problem.task), self.max_steps)
            if meter is not None:
                meter.begin_invocation(1)
            with HttpServer(None, server=EpisodeMCPServer(tools)) as url:
                ctx = InvocationContext(
                    n=1, t=float(backend.now), alerts=[], tools=_NoTools(), workspace=workspace,
                    budget_s=self.budget_s, deadline=time.monotonic() + self.budget_s, mcp_url=url,
                    model_base_urls=dict(meter.base_urls) if meter is not None else {},
                    namespace=backend.namespace, brief=brief)
                ctx.sandbox = isolation.sandbox_for(ctx)
                outcome = call_with_budget(lambda: self.agent.invoke(ctx), self.budget_s + isolation.kill_grace_s,
                                           agent=self.spec)
                tools.close("the agent's process ended")
            residual = dict(meter.end_invocation().record_fields()) if meter is not None else dict(NO_USAGE)
            status, detail = outcome.status, outcome.detail
            # the process itself: how it ended and what it spent after its last tool call; not a step
            recorder.append("invocations", {
                "n": tools.steps + 1, "t": float(backend.now), "kind": "process", "status": status,
                "detail": detail[:2000], "wall_s": round(tools.idle_s(), 6), "in_chars": 0, "out_chars": 0,
                **residual})
            trajectory = [*tools.trajectory, {"step": tools.steps + 1, "t": float(backend.now),
                                              "process": status, "detail": detail[:2000]}]
        return trajectory


def play_external(problem: Problem, spec: str, seed: int, max_steps: int, max_cost_usd: float | None, *,
                  hidden: tuple[Path, ...] = (), budget_s: float = EPISODE_BUDGET_S) -> ExternalEpisode:
    return ExternalEpisode(problem, spec, seed, max_steps, max_cost_usd, hidden, budget_s)
