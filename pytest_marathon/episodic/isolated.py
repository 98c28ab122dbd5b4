"""The runner's handle on an AIOpsLab-shaped agent class running in its own process, inside the
bubblewrap sandbox where there is one (the marathon's isolation, ARCHITECTURE.md §6): the agent
sees an empty home and temporary folders, no network but the relayed metering proxy, and none of
the package's catalog; the episode's problem never leaves the runner.

A reply that does not come within ACTION_TIMEOUT_S kills the process: the step is recorded as a
timeout and the episode ends, as a crashed agent's does.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_marathon.isolation.channel import ChannelClosed, ChannelTimeout, RunnerEnd
from pytest_marathon.isolation.child import PATH_ENV
from pytest_marathon.isolation.paths import DEFAULT_HIDDEN
from pytest_marathon.isolation.plugin import kill_process_group
from pytest_marathon.isolation.probe import sandbox_support
from pytest_marathon.isolation.relay import RelayPool
from pytest_marathon.isolation.sandbox import SECRET_ENV, Sandbox
from pytest_marathon.metering.credentials import agent_environment

START_TIMEOUT_S = 60.0


class AgentProcessError(RuntimeError):
    """The agent's process refused to start, crashed, or did not answer in time."""


class IsolatedAgent:
    """`get_action`/`init_context` forwarded to the agent's process."""

    def __init__(self, spec: str, *, model_base_urls: dict[str, str] | None = None, timeout_s: float = 120.0,
                 hidden: tuple[Path, ...] = ()) -> None:
        self.spec = spec
        self.timeout_s = timeout_s
        self.workspace = Path(tempfile.mkdtemp(prefix="marathon-episode-agent-"))
        enabled = sandbox_support().available
        self._relays = RelayPool() if enabled else None
        relays = self._relays.relay(model_base_urls.values()) if self._relays and model_base_urls else {}
        self.sandbox = Sandbox(self.workspace, (*hidden, *DEFAULT_HIDDEN), relays, enabled=enabled)
        self.isolation = "sandbox" if enabled else "process"
        argv = [sys.executable, "-m", "pytest_marathon.episodic.child", spec]
        env = {key: value for key, value in os.environ.items() if key not in SECRET_ENV}
        env.update(agent_environment(model_base_urls or {}))
        env = self.sandbox.environment(env)
        path = [os.path.abspath(entry or os.getcwd()) for entry in sys.path]
        env[PATH_ENV] = json.dumps([*path, *([] if os.getcwd() in path else [os.getcwd()])])
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
            self.sandbox.wrap(argv, cwd=self.workspace), cwd=self.workspace, env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr, start_new_session=True)
        assert self._process.stdin is not None and self._process.stdout is not None
        self._end = RunnerEnd(self._process.stdin, self._process.stdout)
        hello = self._receive(START_TIMEOUT_S)
        if hello.get("op") != "ready":
            message = str(hello.get("message") or "the agent process refused")
            self.close()
            raise AgentProcessError(message)
        self.name = str(hello.get("name") or spec)

    def _receive(self, timeout_s: float) -> dict[str, Any]:
        try:
            return self._end.receive(time.monotonic() + timeout_s)
        except ChannelTimeout:
            self.close()
            raise AgentProcessError(f"the agent process did not answer within {timeout_s:g} s") from None
        except ChannelClosed as exc:
            tail = self._tail()
            self.close()
            raise AgentProcessError(f"the agent process ended ({exc}) {tail}".strip()) from None

    def _tail(self) -> str:
        self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, self._stderr.tell() - 1600))
        return self._stderr.read().decode("utf-8", "replace").strip()[-400:]

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        if self._process is None:
            raise AgentProcessError("the agent process is gone")
        try:
            self._end.send(message)
        except ChannelClosed as exc:
            self.close()
            raise AgentProcessError(f"the agent process is gone ({exc})") from None
        answer = self._receive(self.timeout_s)
        if answer.get("op") == "crash":
            raise AgentProcessError(str(answer.get("detail")))
        return answer

    def init_context(self, problem_desc: str, instructions: str, apis: dict[str, str]) -> None:
        self._ask({"op": "init", "problem_desc": problem_desc, "instructions": instructions, "apis": apis})

    def get_action(self, state: str) -> str:
        answer = self._ask({"op": "act", "state": state})
        if not isinstance(answer.get("text"), str):
            raise TypeError(f"get_action returned {answer.get('type')}, not str")
        return answer["text"]

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            kill_process_group(process)
        if self._relays is not None:
            self._relays.close()
            self._relays = None
        with contextlib.suppress(OSError):
            self._stderr.close()
        shutil.rmtree(self.workspace, ignore_errors=True)
