"""`ChildAgent`: the runner's handle on a plug-in agent that runs in a child process.

The plug-in's module is imported only in the child. Resolving the spec starts a throwaway child
(sandboxed like the real one) that imports it and answers with its name and flags, or with the
one-line reason it is not an agent. The run then starts one child at the first invocation and
keeps it for the run, so the plug-in keeps its memory between invocations as it would in
process. At the budget the child is killed, which revokes everything it was doing; the next
invocation starts a fresh one.

The child is started from a thread of its own that lives as long as the handle: bubblewrap's
`--die-with-parent` kills the sandbox when the *thread* that started it ends, and each invocation
runs in a short-lived thread of the runner.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pytest_marathon.isolation.channel import ChannelClosed, ChannelTimeout, RunnerEnd
from pytest_marathon.isolation.child import PATH_ENV
from pytest_marathon.isolation.paths import DEFAULT_HIDDEN
from pytest_marathon.isolation.probe import sandbox_support
from pytest_marathon.isolation.sandbox import SECRET_ENV, Sandbox
from pytest_marathon.metering.credentials import CREDENTIAL_VARIABLES, agent_environment

DESCRIBE_TIMEOUT_S = 60.0
TAIL_CHARS = 400
#: Context fields that do not cross to the child: it gets its own tools and deadline, and is
#: already inside its sandbox.
LOCAL_FIELDS = ("tools", "deadline", "sandbox")


class ChildAgent:
    """A plug-in agent whose code runs in a child process holding only a tools client."""

    def __init__(self, spec: str, target: str, described: Mapping[str, Any]) -> None:
        self.spec = spec
        self.target = target
        self.name = str(described["name"])
        self.description = str(described["description"])
        self.needs_ground_truth = bool(described.get("needs_ground_truth"))
        self.needs_mcp = bool(described.get("needs_mcp"))
        self.uses_models = bool(described.get("uses_models", True))
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._end: RunnerEnd | None = None
        self._stderr: Any = None
        self._spawner: ThreadPoolExecutor | None = None

    @classmethod
    def describe(cls, spec: str, target: str) -> ChildAgent:
        """Import and check the plug-in in a throwaway child; ValueError with its one-line
        reason when it is not an agent."""
        return cls(spec, target, _described(spec, target, tuple(sys.path)))

    # one invocation ------------------------------------------------------------------------
    def invoke(self, ctx: Any) -> Mapping[str, Any] | None:
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                problem = self._start(ctx)
                if problem is not None:
                    return problem
            assert self._end is not None
            try:
                self._end.send({"op": "invoke", "ctx": _portable(ctx),
                                "remaining_s": max(0.0, ctx.deadline - time.monotonic())})
                return self._serve(ctx)
            except ChannelTimeout:
                self._kill()
                return _failed("timeout", f"exceeded the {ctx.budget_s:g} s budget; the agent "
                               "process was killed (the next invocation starts a new one)")
            except ChannelClosed as exc:
                return _failed("crash", self._death(str(exc)))

    def _serve(self, ctx: Any) -> Mapping[str, Any] | None:
        """Answer the child's tool calls until it says how the invocation ended."""
        assert self._end is not None
        while True:
            message = self._end.receive(ctx.deadline)
            op = message.get("op")
            if op == "call":
                tool, args = str(message.get("tool")), dict(message.get("args") or {})
                self._answer(lambda tool=tool, args=args: ctx.tools.call(tool, **args))
            elif op == "list_tools":
                self._answer(ctx.tools.list_tools)
            elif op == "done":
                usage = message.get("usage")
                return usage if isinstance(usage, Mapping) else None
            elif op == "crash":
                return _failed("crash", str(message.get("detail") or "the agent raised"))
            else:
                raise ChannelClosed(f"unexpected message from the agent process: {op!r}")

    def _answer(self, call: Any) -> None:
        assert self._end is not None
        try:
            value = call()
        except Exception as exc:  # noqa: BLE001 - a refusal goes back to the agent
            self._end.send({"op": "refused", "message": f"{type(exc).__name__}: {exc}"})
        else:
            self._end.send({"op": "result", "value": value})

    # the process -------------------------------------------------------------------------
    def _start(self, ctx: Any) -> Mapping[str, Any] | None:
        """Start the run's child in `ctx.sandbox`; its import counts against this invocation."""
        sandbox = getattr(ctx, "sandbox", None)
        argv, env = _child_command(self.spec, self.target, sandbox, ctx.workspace,
                                   model_base_urls=getattr(ctx, "model_base_urls", None) or {})
        # kept open for the child's life, closed by _kill
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        if self._spawner is None:
            self._spawner = ThreadPoolExecutor(1, thread_name_prefix="marathon-child")
        try:
            self._process = self._spawner.submit(
                subprocess.Popen, argv, cwd=ctx.workspace, env=env, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=self._stderr, start_new_session=True,
            ).result()
        except OSError as exc:
            self._process = None
            return _failed("error", f"could not start the agent process: {exc}")
        assert self._process.stdin is not None and self._process.stdout is not None
        self._end = RunnerEnd(self._process.stdin, self._process.stdout)
        try:
            hello = self._end.receive(ctx.deadline)
        except ChannelTimeout:
            self._kill()
            return _failed("timeout", f"the agent process did not start within the "
                           f"{ctx.budget_s:g} s budget")
        except ChannelClosed as exc:
            return _failed("crash", self._death(str(exc)))
        if hello.get("op") != "ready":
            self._kill()
            return _failed("crash", str(hello.get("message") or "the agent process refused"))
        return None

    def _death(self, why: str) -> str:
        """What the child's exit says: its status and the end of what it wrote to stderr."""
        code = None
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = self._process.wait(timeout=5)
        tail = ""
        if self._stderr is not None:
            self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, self._stderr.tell() - 4 * TAIL_CHARS))
            tail = self._stderr.read().decode("utf-8", "replace").strip()[-TAIL_CHARS:]
        self._kill()
        status = f"exit {code}" if code is not None and code >= 0 else f"signal {-(code or 0)}"
        return f"the agent process ended ({status}; {why}) {tail}".strip()[:500]

    def _kill(self) -> None:
        process, self._process, self._end = self._process, None, None
        if process is not None:
            kill_process_group(process)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def stop(self) -> None:
        """End the run's child (the runner calls this when the run ends)."""
        with self._lock:
            if self._end is not None:
                with contextlib.suppress(ChannelClosed):
                    self._end.send({"op": "stop"})
            if self._process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(timeout=2)
            self._kill()
            if self._spawner is not None:
                self._spawner.shutdown(wait=False)
                self._spawner = None


def kill_process_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the agent process and everything it started (its own session), reap it, close
    the channel's pipes."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)
    for pipe in (process.stdin, process.stdout):
        with contextlib.suppress(OSError):
            if pipe is not None:
                pipe.close()


def _failed(status: str, detail: str) -> dict[str, Any]:
    return {"status": status, "detail": detail[:500]}


def _portable(ctx: Any) -> dict[str, Any]:
    """The context as the child rebuilds it (JSON), without what stays in the runner."""
    values = {}
    for field in dataclasses.fields(ctx):
        if field.name in LOCAL_FIELDS:
            continue
        value = getattr(ctx, field.name)
        if isinstance(value, Path):
            value = str(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        values[field.name] = value
    return values


def _child_command(
    spec: str, target: str, sandbox: Sandbox | None, cwd: Path, *flags: str,
    model_base_urls: Mapping[str, str] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """The child's command line and environment: the runner's secrets out, and the user's
    model credentials replaced by the metering proxy's placeholder (removed outright for the
    throwaway child, which has no proxy and no business with them)."""
    argv = [sys.executable, "-m", "pytest_marathon.isolation.child", spec, target, *flags]
    env = {key: value for key, value in os.environ.items() if key not in SECRET_ENV}
    if model_base_urls is None:
        env = {key: value for key, value in env.items() if key not in CREDENTIAL_VARIABLES}
    else:
        env.update(agent_environment(model_base_urls))
    if sandbox is not None:
        env = sandbox.environment(env)
        argv = sandbox.wrap(argv, cwd=cwd)
    # The runner's import path, then its current directory (a plug-in module there is found as
    # `python -m` would find it, after every installed package).
    path = [os.path.abspath(entry or os.getcwd()) for entry in sys.path]
    env[PATH_ENV] = json.dumps([*path, *([] if os.getcwd() in path else [os.getcwd()])])
    return argv, env


@functools.lru_cache(maxsize=64)
def _described(spec: str, target: str, path: tuple[str, ...]) -> dict[str, Any]:
    """Run the throwaway child once per spec and import path (resolving repeats per run)."""
    workspace = Path(tempfile.mkdtemp(prefix="marathon-describe-"))
    try:
        sandbox = Sandbox(workspace, hidden=DEFAULT_HIDDEN, enabled=sandbox_support().available)
        argv, env = _child_command(spec, target, sandbox, workspace, "--describe")
        try:
            done = subprocess.run(argv, cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=DESCRIBE_TIMEOUT_S, check=False,
                                  start_new_session=True)
        except subprocess.TimeoutExpired:
            raise ValueError(f"agent {spec!r}: importing it took more than "
                             f"{DESCRIBE_TIMEOUT_S:g} s") from None
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    lines = done.stdout.decode("utf-8", "replace").splitlines()
    try:
        answer = json.loads(lines[0]) if lines else {}
    except ValueError:
        answer = {}
    if answer.get("op") == "ready":
        return answer
    if answer.get("op") == "refused":
        raise ValueError(str(answer.get("message")))
    tail = done.stderr.decode("utf-8", "replace").strip().splitlines()
    raise ValueError(f"agent {spec!r}: its process ended (exit {done.returncode}) before "
                     f"describing the agent: {tail[-1] if tail else 'no output'}")
