"""Ctrl-C and SIGTERM: raised where the process is, held back while a bundle is opened or closed.

A signal's Python handler runs in the main thread between two bytecodes, wherever that thread is.
That is what lets a marathon stop promptly, and also what can leave evidence half-written: a
Ctrl-C landing while the recorder writes its first manifest, or closes the bundle, would leave a
folder that no one can score. `StopSignals` turns SIGINT into KeyboardInterrupt and SIGTERM into
`Terminated` (so SIGTERM stops a run as Ctrl-C does, instead of killing the process), except
inside `deferred()`, where a signal is only remembered and raised when the block ends.

While the command line starts (imports, argument parsing), `held_while_starting` holds a signal
instead: raised inside an import it would leave half-initialised modules behind, and raised inside
code that swallows exceptions (a dictionary lookup calling `__eq__`) it would be lost and the run
would go on. The caller stops cleanly once the block ends.

Handlers can only be installed from the main thread; elsewhere (a library caller's worker thread)
`StopSignals` changes nothing. A SIGINT handler someone else installed (or SIG_IGN) is kept.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any


class Terminated(BaseException):
    """SIGTERM arrived. A BaseException, as KeyboardInterrupt is, because it is raised wherever the
    main thread happens to be, usually inside the twin running service code, whose
    `except Exception` would otherwise record it as a failed RPC and carry on."""


def _ours_to_replace(handler: Any) -> bool:
    """Python's own Ctrl-C handler, or an enclosing `StopSignals` (the CLI's or a pytest item's
    around the runner's): the inner one takes over until it exits, so its `deferred` blocks hold
    Ctrl-C too instead of the outer one raising in the middle of them."""
    return handler is signal.default_int_handler or isinstance(
        getattr(handler, "__self__", None), StopSignals
    )


def stop_exception(signum: int) -> BaseException:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def signal_name(signum: int) -> str:
    return "SIGTERM" if signum == signal.SIGTERM else "SIGINT"


class StopSignals:
    """While entered: SIGINT and SIGTERM raise (see the module docstring), or wait in `deferred`.

    `pending` is the signal number held back by `deferred(raise_pending=False)` (the caller is
    stopping anyway and decides what to do with it)."""

    def __init__(self) -> None:
        self.pending: int | None = None
        self._depth = 0
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is not threading.main_thread():
            return self
        for signum in (signal.SIGINT, signal.SIGTERM):
            current = signal.getsignal(signum)
            if signum == signal.SIGINT and not _ours_to_replace(current):
                continue  # someone else decides what Ctrl-C does (pytest's own handler, SIG_IGN)
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth = 0
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._depth:
            if self.pending is None:
                self.pending = signum
            return
        raise stop_exception(signum)

    def mute(self) -> None:
        """Hold every further signal until `__exit__` (which drops it): for a process that is
        already stopping and only reporting how."""
        self._depth += 1

    @contextmanager
    def deferred(self, *, raise_pending: bool = True) -> Iterator[None]:
        """Hold SIGINT/SIGTERM back for the block; raise one that arrived when it ends normally
        (unless `raise_pending` is False: it then stays in `pending`)."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        if raise_pending and self._depth == 0 and self.pending is not None:
            signum, self.pending = self.pending, None
            raise stop_exception(signum)


@contextmanager
def held_while_starting() -> Iterator[StopSignals]:
    """Hold SIGINT/SIGTERM for the block; afterwards `.pending` is the signal that arrived, if any,
    and the caller stops with `exit_code(pending)` instead of starting work."""
    stops = StopSignals()
    with stops, stops.deferred(raise_pending=False):
        yield stops


def exit_code(signum: int) -> int:
    """What a shell reports for a process stopped by this signal: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + signum


def stopped_while_starting(signum: int) -> int:
    """Say that `signum` stopped the command before it started any work; its exit code."""
    print(f"pytest-marathon: interrupted ({signal_name(signum)}) while starting", file=sys.stderr)
    return exit_code(signum)
