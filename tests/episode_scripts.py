"""What the episodic tests share: a scripted AIOpsLab-shaped agent, the collected item ids, and
the kubectl guard (exec_shell runs the real kubectl)."""

from __future__ import annotations

import shutil

import pytest

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None,
                                   reason="kubectl not installed (Debian package 'kubernetes-client')")


class Script:
    """Runs the given API calls in turn (the last one should submit); keeps every state it saw."""

    name = "script"

    def __init__(self, *calls: str) -> None:
        self.calls = list(calls)
        self.seen: list[str] = []

    async def get_action(self, state: str) -> str:
        self.seen.append(state)
        return f"```\n{self.calls.pop(0)}\n```"


def collected_ids(lines: list[str], agent: str) -> list[str]:
    """The problem ids of `pytest --collect-only -q` lines for `agent`'s episodes."""
    prefix = f"episode[{agent}-"
    return [line[len(prefix):-1] for line in lines if line.startswith(prefix)]
