"""A live marathon driven by whoever connects over MCP: a person with the MCP Inspector, an IDE,
or an agent under development.

The run is a real marathon (same loop, schedule, recorder and scorer as every other run), whose
agent is a window of wall-clock time: at each invocation the world pauses for Δ / speed seconds
while the connected client reads and acts through the tools on a fixed loopback URL. Calls that
arrive while the world is advancing are refused by the session, so a client that keeps calling
cannot act on a moving world. The bundle is sealed and scored like any run, so an agent tried out
by hand gets the score the benchmark would give it.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from pytest_marathon.agents import InvocationContext
from pytest_marathon.config import DEFAULT_DELTA_S, ConfigError, RunConfig
from pytest_marathon.results import MarathonResult

AGENT_SPEC = "mcp-client"
#: The window's margin inside the invocation budget, so the runner never records a timeout for it.
BUDGET_MARGIN_S = 5.0


class McpClientAgent:
    """The connected MCP client, seen from the runner: a window of wall time per invocation."""

    name = AGENT_SPEC
    description = "Whoever is connected to `pytest-marathon mcp --speed` (a person, an IDE, an agent)"
    needs_ground_truth = False
    needs_mcp = True

    def __init__(self, window_s: float, port: int, out: TextIO) -> None:
        self.window_s = window_s
        self.mcp_port = port  # the runner serves its session on this port (0: any free one)
        self._out = out
        self._announced = False

    def invoke(self, ctx: InvocationContext) -> None:
        if not self._announced:
            print(f"serving MCP on {ctx.mcp_url}", file=self._out, flush=True)
            self._announced = True
        firing = sum(1 for alert in ctx.alerts if alert.get("state") == "firing")
        print(
            f"invocation {ctx.n} at t={ctx.t:g} s: {firing} alerts firing; the tools are open "
            f"for {self.window_s:g} s",
            file=self._out,
            flush=True,
        )
        time.sleep(max(0.0, min(self.window_s, ctx.deadline - time.monotonic() - 1.0)))
        return None


def live_config(
    app: str, seed: int, scenario: str, speed: float, out_dir: str, delta_s: float = DEFAULT_DELTA_S
) -> tuple[RunConfig, float]:
    """The run and the wall-clock window of each invocation at this speed."""
    if not speed > 0:
        raise ConfigError(f"--speed must be positive, got {speed:g}")
    window_s = delta_s / speed
    config = RunConfig(
        app=app,
        agent=AGENT_SPEC,
        seed=seed,
        scenario=scenario,
        out_dir=out_dir,  # type: ignore[arg-type]
        delta_s=delta_s,
        budget_s=window_s + BUDGET_MARGIN_S,
    )
    return config, window_s


def serve_live(
    app: str, seed: int, scenario: str, speed: float, port: int, out_dir: str
) -> MarathonResult:
    """Run the live marathon to its end (Ctrl-C closes the bundle as incomplete) and score it."""
    from pytest_marathon.run.progress import TerminalProgress
    from pytest_marathon.runner import run_marathon

    config, window_s = live_config(app, seed, scenario, speed, out_dir)
    agent = McpClientAgent(window_s, port, sys.stderr)
    return run_marathon(config, agent=agent, progress=TerminalProgress(sys.stderr))
