"""How isolated a run's agent is, refusing a run below what was required, and the per-run state
of the sandbox (the relays and the `Sandbox` put on each invocation context).

Levels, from strongest: `sandbox` (a separate process under bubblewrap), `process` (a separate
process, bubblewrap unavailable here), `in-process` (the agent's code runs inside the runner: an
agent object handed to `run_marathon` or the `marathon` fixture, or a built-in baseline). The
built-in baselines (noop, runbook, keep-style, oracle) are the project's own code, versioned with
the scorer in the release the manifest names, so their results count as verified although they
run in process (the oracle is flagged by `ground_truth` anyway); an in-process object of any other
class is unverified: it shares the runner's memory and could rewrite its own evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_marathon.isolation.paths import DEFAULT_HIDDEN
from pytest_marathon.isolation.probe import sandbox_support
from pytest_marathon.isolation.relay import RelayPool
from pytest_marathon.isolation.sandbox import Sandbox

#: The isolation levels a manifest records, weakest first.
LEVELS = ("in-process", "process", "sandbox")
REQUIRED = "sandbox"
KILL_GRACE_S = 2.0


class IsolationRequired(ValueError):
    """The run would start below the required isolation; the message says why, in one line."""


def runs_as_process(agent: Any) -> bool:
    """Agents whose code runs in a process of its own: plug-ins in their child, `cmd:` programs
    and the CLI presets."""
    from pytest_marathon.agents.external import CommandAgent, _CliPreset
    from pytest_marathon.isolation.plugin import ChildAgent

    return isinstance(agent, (ChildAgent, CommandAgent, _CliPreset))


def isolation_level(agent: Any) -> str:
    if not runs_as_process(agent):
        return "in-process"
    return "sandbox" if sandbox_support().available else "process"


def is_verified(level: str | None, built_in: bool) -> bool:
    """Whether a result can be trusted not to have touched the runner: anything but an
    in-process agent that is not the project's own baseline."""
    return level != "in-process" or built_in


def require_isolation(agent: Any, option: str) -> None:
    """Refuse an agent that would run below `sandbox` (built-in baselines excepted)."""
    from pytest_marathon.agents.registry import is_built_in

    level = isolation_level(agent)
    if level == REQUIRED or (level == "in-process" and is_built_in(agent)):
        return
    name = getattr(agent, "name", None) or type(agent).__name__
    if level == "process":
        reason = f"bubblewrap is not usable here ({sandbox_support().reason})"
    else:
        reason = "its code would run inside the runner (pass it as a module:Class spec)"
    raise IsolationRequired(f"{option}: agent {name!r} would run at isolation {level!r}, "
                            f"not {REQUIRED!r}: {reason}")


class RunIsolation:
    """One run's sandbox: built once the workspace exists, relays opened as endpoints appear."""

    def __init__(self, agent: Any, workspace: Path, hidden: tuple[Path, ...]) -> None:
        self.agent = agent
        self.level = isolation_level(agent)
        self.workspace = workspace
        self.hidden = (*hidden, *DEFAULT_HIDDEN)
        self._relays: RelayPool | None = None
        self._sandbox: Sandbox | None = None

    @property
    def kill_grace_s(self) -> float:
        """How long past the budget the runner waits for an agent that kills its own process
        at the budget, so the record says what happened (the child plug-in's kill)."""
        from pytest_marathon.isolation.plugin import ChildAgent

        return KILL_GRACE_S if isinstance(self.agent, ChildAgent) else 0.0

    def sandbox_for(self, ctx: Any) -> Sandbox | None:
        """The sandbox of this invocation's agent processes; None for an in-process agent."""
        if self.level == "in-process":
            return None
        enabled = self.level == "sandbox"
        relays = {}
        if enabled:
            urls = [ctx.mcp_url, *(getattr(ctx, "model_base_urls", None) or {}).values()]
            if self._relays is None:
                self._relays = RelayPool()
            relays = self._relays.relay(url for url in urls if url)
        if self._sandbox is None or dict(self._sandbox.relays) != relays:
            self._sandbox = Sandbox(self.workspace, self.hidden, relays, enabled=enabled)
        return self._sandbox

    def close(self) -> None:
        stop = getattr(self.agent, "stop", None)
        if self.level != "in-process" and callable(stop):
            stop()
        if self._relays is not None:
            self._relays.close()
