"""Turning an `--agent` spec into an agent.

Accepted specs, tried in this order: `cmd:<command line>` (any program, run per invocation over
MCP), a built-in name, an entry point of group `pytest_marathon.agents` (how a third-party package
ships an agent), and `module:Attr` (a class, a factory or an instance in an importable module).
Built-ins are imported lazily so that listing agents never needs an external CLI.

Plug-ins (entry points and `module:Attr`) are never imported here: their code runs in a child
process (`pytest_marathon.isolation`), which imports and checks them (`load_plugin`) and
describes them back; a bad spec is refused with the same one-line message either way.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from pytest_marathon.agents.protocol import Agent

ENTRY_POINT_GROUP = "pytest_marathon.agents"
COMMAND_PREFIX = "cmd:"


@dataclass(frozen=True)
class _BuiltIn:
    target: str  # "module:Class" inside pytest_marathon.agents
    description: str

    def load(self) -> Callable[[], Any]:
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(f"pytest_marathon.agents.{module}"), attr)


BUILT_INS: dict[str, _BuiltIn] = {
    "noop": _BuiltIn("noop:NoopAgent", "Does nothing; the no-action baseline for degradation"),
    "oracle": _BuiltIn(
        "oracle:OracleAgent",
        "Reads the hidden schedule and applies each fault's recorded remedy (upper bound; flagged)",
    ),
    "runbook": _BuiltIn(
        "runbook:RunbookAgent",
        "Rule-based Runbook (no model): one incident per workload, one scripted action per rule table",
    ),
    "keep-style": _BuiltIn(
        "keep_style:KeepStyleAgent",
        "Keep-style CEL correlation rules (no model by default) with the Runbook's remedies",
    ),
    "react": _BuiltIn(
        "react:ReactAgent",
        "ReAct (paper baseline): fresh tool-calling conversation per invocation; needs an "
        "OpenAI-compatible model (MARATHON_MODEL; OPENAI_API_KEY/OPENAI_BASE_URL held by the proxy)",
    ),
    "rag": _BuiltIn(
        "rag:RagAgent",
        "RAG (paper baseline): one model call per invocation over retrieved telemetry; needs an "
        "OpenAI-compatible model (MARATHON_MODEL; OPENAI_API_KEY/OPENAI_BASE_URL held by the proxy)",
    ),
    "keep-agent": _BuiltIn(
        "keep_agent:KeepAgent",
        "Keep-agent (paper baseline): Keep's rules group, one model call plans; needs an "
        "OpenAI-compatible model (MARATHON_MODEL; OPENAI_API_KEY/OPENAI_BASE_URL held by the proxy)",
    ),
    "orbit": _BuiltIn(
        "orbit:OrbitAgent",
        "Orbit (paper baseline): persistent incidents and action ledger, bounded JSON decision loop, "
        "budget ladder; needs an OpenAI-compatible model (MARATHON_MODEL; "
        "OPENAI_API_KEY/OPENAI_BASE_URL held by the proxy)",
    ),
    "codex": _BuiltIn(
        "external:CodexAgent", "OpenAI Codex CLI, headless over MCP (needs `codex` and credentials)"
    ),
    "claude-code": _BuiltIn(
        "external:ClaudeCodeAgent",
        "Anthropic Claude Code CLI, headless over MCP (needs `claude` and credentials)",
    ),
}


def _plugin_entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _instantiate(obj: Any, spec: str) -> Agent:
    if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "invoke")):
        try:
            agent = obj()  # a class or a factory
        except ValueError:  # already says what is wrong (AgentUnavailable names the missing CLI)
            raise
        except Exception as exc:  # noqa: BLE001 - the plug-in's failure, reported in one line
            raise ValueError(
                f"agent {spec!r} could not be created: {type(exc).__name__}: {exc}"
            ) from exc
    else:
        agent = obj
    if not callable(getattr(agent, "invoke", None)):
        raise ValueError(f"agent {spec!r} has no invoke(ctx) method")
    for attribute in ("name", "description"):
        if not isinstance(getattr(agent, attribute, None), str):
            raise ValueError(f"agent {spec!r} must have a string attribute {attribute!r}")
    return agent


def _choices() -> str:
    names = sorted(set(BUILT_INS) | set(_plugin_entry_points()))
    return ", ".join(names) + ', module:Class or cmd:"<command line>"'


def resolve_agent(spec: str) -> Agent:
    """The agent a spec names; ValueError naming the choices when it names none.

    A plug-in comes back as a `ChildAgent`: a handle on the child process its code runs in."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"empty agent spec; choose one of {_choices()}")
    spec = spec.strip()
    if spec.startswith(COMMAND_PREFIX):
        from pytest_marathon.agents.external import CommandAgent

        return CommandAgent.from_command_line(spec[len(COMMAND_PREFIX) :])
    if spec in BUILT_INS:
        return _instantiate(BUILT_INS[spec].load(), spec)
    plugins = _plugin_entry_points()
    if spec in plugins or ":" in spec:
        from pytest_marathon.isolation.plugin import ChildAgent

        target = plugins[spec].value if spec in plugins else spec
        return ChildAgent.describe(spec, target)
    raise ValueError(f"unknown agent {spec!r}; choose one of {_choices()}")


def load_plugin(spec: str, target: str) -> Agent:
    """Import a plug-in's `module:Attr` target (Attr may be dotted) and make its agent; errors
    name the user's spec. Runs where the plug-in's code is meant to run: the child process."""
    module_name, _, attr = target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"agent {spec!r}: cannot import module {module_name!r}: {exc}") from exc
    for part in attr.split(".") if attr else [""]:
        if not part or not hasattr(obj, part):
            raise ValueError(f"agent {spec!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return _instantiate(obj, spec)


def is_built_in(agent: object) -> bool:
    """Whether an agent is one of the project's own in-process baselines (its class, not its
    name, decides: a plug-in may call itself `runbook`)."""
    classes = []
    for built_in in BUILT_INS.values():
        if built_in.target.startswith("external:"):
            continue
        try:
            classes.append(built_in.load())
        except Exception:  # noqa: BLE001 - a baseline that cannot load is not this agent
            continue
    return type(agent) in classes


def list_agents() -> list[tuple[str, str]]:
    """(name, one-line description) of every built-in and installed agent, sorted by name."""
    listed = {name: b.description for name, b in BUILT_INS.items()}
    for name, ep in _plugin_entry_points().items():
        if name in listed:
            continue
        try:
            description = getattr(ep.load(), "description", "")
        except Exception as exc:  # noqa: BLE001 - a broken plug-in is listed, not fatal
            description = f"(cannot load: {type(exc).__name__}: {exc})"
        listed[name] = str(description) or f"from {ep.value}"
    return sorted(listed.items())
