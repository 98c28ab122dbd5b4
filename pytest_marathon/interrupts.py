"""Ctrl-C and SIGTERM in a pytest session: stop as pytest stops, keep every finished run.

What a user gets for either signal, with or without `-n`:

* the run in progress closes its bundle as incomplete (`pytest-marathon score --allow-incomplete`
  scores it) and its test fails with one line naming the signal and the bundle;
* the session stops as pytest stops a session (`!!! Interrupted: ... !!!`), the leaderboard and
  every output file cover the runs that finished, and a line names each interrupted run and its
  bundle;
* the exit code is pytest's INTERRUPTED (2) for either signal; no traceback.

SIGTERM's default action kills the process on the spot (under xdist: the controller, whose
workers then lose their channel and are killed with their bundles still `running`), so the
session turns SIGTERM into an interruption like Ctrl-C's. Under xdist the controller does not
stop at once: it passes the signal on to each worker that is running a marathon (their pids come
with the reports of the runs they start) and asks xdist to stop scheduling, then goes on
receiving reports until every worker has closed its run and finished, so the summary knows every
finished and interrupted run. A second signal to the controller stops it at once.

A signal that lands while the summary and output files are written is held until they are
written; the session then exits with INTERRUPTED.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from pytest_marathon.run.stopping import StopSignals, Terminated, signal_name


class SessionTerminated(KeyboardInterrupt):
    """SIGTERM outside a run: a KeyboardInterrupt, so pytest stops the session as for Ctrl-C."""

    def __init__(self) -> None:
        super().__init__("SIGTERM")


class MarathonStopped(Exception):
    """The run of this test was interrupted; the message names the signal and the bundle."""


def stopped_message(run_id: str, reason: str, bundle: str | None, complete: bool) -> str:
    if bundle is None:
        return f"{run_id} interrupted ({reason}) before its run started: no bundle"
    if complete:
        return (f"{run_id} interrupted ({reason}) while it was scored: its bundle is complete: "
                f"{bundle} (score it with `pytest-marathon score`)")
    return (f"{run_id} interrupted ({reason}): its bundle was closed incomplete: {bundle} "
            "(score it with `pytest-marathon score --allow-incomplete`)")


_STOPS = pytest.StashKey[StopSignals]()


class SessionStops:
    """Signal handling of one pytest session (a plugin; see the module docstring)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.interrupted: list[dict[str, Any]] = []
        self.received: int | None = None
        self.running_pids: dict[str, int] = {}  # node id -> pid of the worker running it
        self._previous: dict[int, Any] = {}
        self._finishing: StopSignals | None = None

    # handlers ---------------------------------------------------------------------------------

    @property
    def controller(self) -> bool:
        return self.config.pluginmanager.has_plugin("dsession")

    def install(self) -> None:
        """Called at configure time, as early as a plugin can: SIGTERM (and on the controller,
        Ctrl-C) get the session's handler unless someone else already chose one."""
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            self._install(signal.SIGTERM)
        if self.controller and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._install(signal.SIGINT)

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.install()  # again: xdist's controller plugin may have registered after `configure`

    def _install(self, signum: int) -> None:
        self._previous[signum] = signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if not self.controller or self.received is not None:
            raise SessionTerminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        self.received = signum
        for pid in set(self.running_pids.values()):
            _send(pid, signum)
        dsession = self.config.pluginmanager.getplugin("dsession")
        if dsession is not None and not getattr(dsession, "shouldstop", False):
            dsession.shouldstop = f"{signal_name(signum)} received; the runs in progress stopped"

    def _restore(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    # runs ---------------------------------------------------------------------------------------

    def stopped(self, item: pytest.Item, exc: BaseException) -> MarathonStopped:
        """Note an interrupted run, stop the session after it, and the error its test fails with.
        Only the runner's `MarathonInterrupted` says a bundle was written (and whether it is
        complete: the signal came while the finished run was scored); any other interruption
        came before the run started."""
        stops = item.stash.get(_STOPS, None)
        if stops is not None:
            stops.mute()
        run_id = item.name.partition("[")[2].rstrip("]") or item.name
        reason = str(getattr(exc, "reason", ""))
        signame = "SIGTERM" if "SIGTERM" in reason or isinstance(
            exc, (Terminated, SessionTerminated)) else "SIGINT"
        recorded = bool(getattr(exc, "recorded", False))
        record = {"run_id": run_id, "reason": signame,
                  "bundle": str(exc.bundle) if recorded else None,  # type: ignore[attr-defined]
                  "complete": bool(getattr(exc, "complete", False))}
        self.interrupted.append(record)
        item.session.shouldstop = f"marathon {run_id} interrupted ({signame})"
        return MarathonStopped(stopped_message(**record))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[Any]:
        """Further signals while an interrupted run is being reported are held (a Ctrl-C in a
        terminal reaches a worker twice: from the terminal and passed on by the controller)."""
        if not hasattr(item, "run") or threading.current_thread() is not threading.main_thread():
            return (yield)
        with StopSignals() as stops:
            item.stash[_STOPS] = stops
            return (yield)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """On the controller: which worker runs which marathon, from the reports' pids."""
        pid = getattr(report, "marathon_pid", None)
        if pid is None or not self.controller:
            return
        if report.when == "setup":
            self.running_pids[report.nodeid] = pid
            if self.received is not None:  # started after the signal: stop it too
                _send(pid, self.received)
        elif report.when == "teardown":
            self.running_pids.pop(report.nodeid, None)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker's interrupted runs come with its last words (`workeroutput`)."""
        output = getattr(node, "workeroutput", None) or {}
        self.interrupted.extend(output.get("marathon_interrupted", []))

    # finishing ----------------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Iterator[None]:
        """Hold signals while results, outputs and the summary are written."""
        self._restore()
        if hasattr(self.config, "workerinput"):
            self.config.workeroutput["marathon_interrupted"] = list(self.interrupted)
        if threading.current_thread() is threading.main_thread():
            self._finishing = StopSignals().__enter__()
            self._finishing.mute()
        try:
            return (yield)
        finally:
            if self._finishing is not None and self._finishing.pending is not None:
                session.exitstatus = pytest.ExitCode.INTERRUPTED

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self._restore()
        if self._finishing is not None:
            self._finishing.__exit__(None, None, None)
            self._finishing = None
        if _pytest_is_the_program(config) and threading.current_thread() is threading.main_thread():
            # the summary is printed and the process is about to exit: a signal now ends it
            # with INTERRUPTED instead of killing it (an in-process caller keeps its handlers)
            for signum in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(signum) in (signal.SIG_DFL, signal.default_int_handler):
                    signal.signal(signum, _exit_interrupted)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.interrupted:
            return
        terminalreporter.write_sep("-", "marathon: interrupted runs")
        for run in self.interrupted:
            terminalreporter.write_line(stopped_message(**run))

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """Drop traceback entries without a line number before pytest renders them: a signal
        can land on an instruction that has none, which pytest's renderer cannot handle."""
        strip_lineless_frames(excinfo)


def strip_lineless_frames(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    seen: set[int] = set()
    exc: BaseException | None = excinfo.value
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc.__traceback__ = _relinked(exc.__traceback__)
        exc = exc.__cause__ or exc.__context__
    tb = excinfo.value.__traceback__
    if tb is not None:
        from _pytest._code.code import Traceback  # the type `ExceptionInfo.traceback` holds

        excinfo.traceback = Traceback(tb)


def _relinked(tb: Any) -> Any:
    kept = []
    while tb is not None:
        if isinstance(tb.tb_lineno, int) and tb.tb_lineno >= 1 and tb.tb_frame.f_lineno is not None:
            kept.append(tb)
        tb = tb.tb_next
    for here, after in zip(kept, kept[1:] + [None], strict=True):
        here.tb_next = after
    return kept[0] if kept else None


def _pytest_is_the_program(config: pytest.Config) -> bool:
    """This session is the process's command line (`pytest ...`, `python -m pytest ...`), not
    one run in-process by a caller (pytester, `pytest.main([...])`)."""
    if list(config.invocation_params.args) != sys.argv[1:]:
        return False
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name in ("pytest", "pytest.__main__"):
        return True
    return bool(sys.argv) and Path(sys.argv[0]).name in ("pytest", "py.test")


def _exit_interrupted(signum: int, frame: FrameType | None) -> None:
    """Every output is written: flush and leave now (an exception raised here could land in an
    atexit callback, where Python prints it and goes on)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(int(pytest.ExitCode.INTERRUPTED))


def _send(pid: int, signum: int) -> None:
    with contextlib.suppress(OSError):  # the worker already ended
        os.kill(pid, signum)
