"""The process an AIOpsLab-shaped agent class runs in during an episode: its code and a pipe,
nothing else (`python -m pytest_marathon.episodic.child module:Class`).

It imports the class here, never in the runner, answers `ready` (or why it cannot), then serves
the episode: `init` calls the agent's `init_context`, each `act` awaits its `get_action` and
sends the text back. The twin, the problem and the recorder are in another process; what the agent
can learn of them is what the interface answers.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import sys
from typing import Any

from pytest_marathon.isolation.channel import ChannelClosed
from pytest_marathon.isolation.child import PATH_ENV, take_channel


def load(spec: str) -> Any:
    module_name, sep, class_name = spec.partition(":")
    if not sep or not module_name or not class_name:
        raise ValueError(f"{spec!r} is not module:Class")
    cls = getattr(importlib.import_module(module_name), class_name, None)
    if cls is None:
        raise ValueError(f"module {module_name!r} has no class {class_name!r}")
    agent = cls()
    if not callable(getattr(agent, "get_action", None)):
        raise ValueError(f"{spec} has no get_action(state) method")
    return agent


def main(argv: list[str]) -> int:
    end = take_channel()
    runner_path = json.loads(os.environ.pop(PATH_ENV, "[]"))
    sys.path[:] = [*runner_path, *(entry for entry in sys.path if entry not in runner_path)]
    try:
        agent = load(argv[0])
    except BaseException as exc:  # noqa: BLE001 - a broken agent is a refusal, not a trace
        end.send({"op": "refused", "message": f"agent {argv[0]!r} could not be created: {type(exc).__name__}: {exc}"})
        return 1
    end.send({"op": "ready", "name": str(getattr(agent, "name", type(agent).__name__))})
    loop = asyncio.new_event_loop()
    while True:
        try:
            message = end.receive()
        except ChannelClosed:
            return 0
        op = message.get("op")
        try:
            if op == "init":
                if callable(getattr(agent, "init_context", None)):
                    agent.init_context(message["problem_desc"], message["instructions"], message["apis"])
                end.send({"op": "ok"})
            elif op == "act":
                answer = agent.get_action(message["state"])
                if inspect.isawaitable(answer):
                    answer = loop.run_until_complete(answer)
                end.send({"op": "reply", "text": answer if isinstance(answer, str) else None,
                          "type": type(answer).__name__})
            else:
                return 0
        except Exception as exc:  # noqa: BLE001 - the runner records it and ends the episode
            end.send({"op": "crash", "detail": f"{type(exc).__name__}: {exc}"[:2000]})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
