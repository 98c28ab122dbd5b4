"""The child process a plug-in agent runs in: the plug-in's code and a tools client, nothing else.

Started by `ChildAgent` (`python -m pytest_marathon.isolation.child SPEC TARGET [--describe]`),
inside the sandbox where there is one. It imports the plug-in here, never in the runner, answers
with its name and flags (or the one-line reason it is not an agent), then serves invocations: the
context arrives over the channel, the agent's tool calls go back over it to the runner's tool
session, and how the call ended (usage, or the exception) is the answer. The runner, the
orchestrator, the recorder and the twin are in another process; what the plug-in can reach of
them is what the tools answer.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_marathon.isolation.channel import ChannelClosed, ChildEnd

#: The runner's import path, so a plug-in importable there is importable here.
PATH_ENV = "MARATHON_CHILD_SYS_PATH"
USAGE_KEYS = ("model_calls", "input_tokens", "output_tokens", "cost_usd", "status", "detail")


class ToolCallRefused(RuntimeError):
    """The runner refused a tool call (the invocation is over, or the call itself failed)."""


class PipeTools:
    """The agent's tools client: each call is one request and one answer on the channel."""

    def __init__(self, end: ChildEnd) -> None:
        self._end = end
        self._lock = threading.Lock()
        self._open = True

    def close(self) -> None:
        with self._lock:
            self._open = False

    def _ask(self, message: dict[str, Any]) -> Any:
        with self._lock:
            if not self._open:
                raise ToolCallRefused("this invocation is over; tool call refused")
            self._end.send(message)
            answer = self._end.receive()
        if answer.get("op") == "refused":
            raise ToolCallRefused(str(answer.get("message") or "refused"))
        return answer.get("value")

    def call(self, tool: str, /, **args: Any) -> dict[str, Any]:
        return self._ask({"op": "call", "tool": tool, "args": args})

    def list_tools(self) -> list[dict[str, Any]]:
        return self._ask({"op": "list_tools"})


def take_channel() -> ChildEnd:
    """Keep private copies of stdin/stdout for the channel and point fds 0/1 elsewhere, so a
    plug-in that prints (or a program it starts) cannot corrupt the channel."""
    from_runner = os.fdopen(os.dup(0), "rb")
    to_runner = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return ChildEnd(from_runner, to_runner)


def _usage(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    data = value if isinstance(value, Mapping) else getattr(value, "__dict__", {})
    return {key: data[key] for key in USAGE_KEYS if key in data}


def _context(message: Mapping[str, Any], tools: PipeTools) -> Any:
    from pytest_marathon.agents.protocol import InvocationContext

    known = {field.name for field in dataclasses.fields(InvocationContext)}
    values = {key: value for key, value in message["ctx"].items() if key in known}
    values["workspace"] = Path(values["workspace"])
    values["deadline"] = time.monotonic() + float(message["remaining_s"])
    values["tools"] = tools
    return InvocationContext(**values)


def _invoke(agent: Any, spec: str, message: Mapping[str, Any], end: ChildEnd) -> None:
    # the runner's own one-line account of a crash, so a plug-in's crash reads the same in its
    # child as in process
    from pytest_marathon.run.invoke import _crash_detail

    tools = PipeTools(end)
    try:
        value = agent.invoke(_context(message, tools))
    except BaseException as exc:  # noqa: BLE001 - any agent failure is that invocation's crash
        tools.close()
        end.send({"op": "crash", "detail": _crash_detail(spec, exc)})
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return
    tools.close()
    end.send({"op": "done", "usage": _usage(value)})


def _describe(agent: Any) -> dict[str, Any]:
    return {
        "op": "ready",
        "name": agent.name,
        "description": agent.description,
        "needs_ground_truth": bool(getattr(agent, "needs_ground_truth", False)),
        "needs_mcp": bool(getattr(agent, "needs_mcp", False)),
        "uses_models": bool(getattr(agent, "uses_models", True)),
    }


def main(argv: list[str]) -> int:
    end = take_channel()
    spec, target, *flags = argv
    runner_path = json.loads(os.environ.pop(PATH_ENV, "[]"))
    sys.path[:] = [*runner_path, *(entry for entry in sys.path if entry not in runner_path)]
    from pytest_marathon.agents.registry import load_plugin

    try:
        agent = load_plugin(spec, target)
    except ValueError as exc:
        end.send({"op": "refused", "message": str(exc)})
        return 1
    except BaseException as exc:  # noqa: BLE001 - a broken plug-in is a refusal, not a trace
        end.send({"op": "refused", "message": f"agent {spec!r} could not be created: "
                  f"{type(exc).__name__}: {exc}"})
        return 1
    end.send(_describe(agent))
    if "--describe" in flags:
        return 0
    while True:
        try:
            message = end.receive()
        except ChannelClosed:
            return 0
        if message.get("op") == "invoke":
            _invoke(agent, spec, message, end)
        elif message.get("op") == "stop":
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
