"""What the runner hands an agent at each invocation, and what an agent must look like.

The runner owns the clock and the world; an agent only sees the cumulative alert history, a tools
client, a private workspace and a budget. Keeping that hand-off in one small dataclass is what lets
an in-process baseline, a Python plug-in and an external CLI be driven by the same loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class ToolClient(Protocol):
    """The agent's only door to the system (`pytest_marathon.interface.InProcessClient`)."""

    def call(self, tool: str, /, **args: Any) -> dict[str, Any]: ...

    def list_tools(self) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class InvocationUsage:
    """What one invocation spent and how it ended; becomes its `invocations.jsonl` record.

    `status`/`detail` let an agent that supervises something else (an external CLI) say that
    the thing it ran failed or timed out, although the agent itself returned normally.
    """

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    status: str = "ok"
    detail: str = ""


@dataclass(frozen=True)
class TaskBrief:
    """A task given in words instead of the marathon's rules (episodic mode): `rules` go where a
    preset puts its project instructions (AGENTS.md / CLAUDE.md, `.marathon/task.md` for a `cmd:`
    program), `prompt` is what the CLI is asked; the answer is a tool call (`submit`), so no
    incident block is read from the CLI's last message."""

    rules: str
    prompt: str


@dataclass
class InvocationContext:
    """One invocation's hand-off.

    `alerts` is the cumulative alert history, one record per alert: `alert_id`, `alertname`,
    `labels`, `annotations`, `state` (`firing`/`resolved`), `fired_at`, `resolved_at`, `value`.
    `ground_truth` is filled only for agents that declare `needs_ground_truth` (the oracle): the
    schedule records of the faults injected so far. `mcp_url`/`mcp_command` let external programs
    reach the same tools over MCP. `model_base_urls` are the run's metering proxy: "openai" a
    base URL as OPENAI_BASE_URL expects it (ends in `/v1`), "anthropic" one as ANTHROPIC_BASE_URL
    expects it; any API key works there (the proxy substitutes the user's); empty when the run
    has no proxy.
    """

    n: int
    t: float
    alerts: Sequence[Mapping[str, Any]]
    tools: ToolClient
    workspace: Path
    budget_s: float
    deadline: float
    #: How the run confines the agent's processes (`pytest_marathon.isolation.Sandbox`), for
    #: `run_process_invocation`; None for an agent whose code runs in process.
    sandbox: Any = None
    ground_truth: Sequence[Mapping[str, Any]] | None = None
    mcp_url: str | None = None
    mcp_command: Sequence[str] | None = None
    model_base_urls: Mapping[str, str] = field(default_factory=dict)
    #: the application's Kubernetes namespace (`boutique`, `astronomy`), for agents that brief a
    #: program in words
    namespace: str = ""
    #: the episode's task for a program briefed in words; None: the marathon's rules
    brief: TaskBrief | None = None


@runtime_checkable
class Agent(Protocol):
    """An SRE agent. `invoke` may return usage (model calls, tokens, dollars) or None; when the
    run's metering proxy runs, the recorded usage is what it measured. An agent that calls no
    model may declare `uses_models = False` and runs without a proxy."""

    name: str
    description: str
    needs_ground_truth: bool = False

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None: ...


def wants_ground_truth(agent: object) -> bool:
    """Whether the runner must hand this agent the schedule (plug-ins may omit the flag)."""
    return bool(getattr(agent, "needs_ground_truth", False))
