"""Live progress of a run: virtual minute, active faults, firing alerts, invocation n of N.

A run takes seconds to minutes of wall time; without progress a user cannot tell a slow agent
from a hang. On a terminal one line is rewritten in place; in a log (CI) a line is printed every
few virtual minutes so the log stays readable.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TextIO


@dataclass(frozen=True)
class ProgressState:
    run_id: str
    t: float
    horizon: float
    active_faults: int
    firing_alerts: int
    invocation: int
    invocations: int

    def line(self) -> str:
        minute = int(self.t // 60)
        return (
            f"{self.run_id}: minute {minute:>3}/{int(self.horizon // 60)}"
            f" | faults active {self.active_faults:>2}"
            f" | alerts firing {self.firing_alerts:>3}"
            f" | invocation {self.invocation}/{self.invocations}"
        )


class ProgressSink(Protocol):
    def update(self, state: ProgressState) -> None: ...

    def finish(self, message: str) -> None: ...


class SilentProgress:
    """For library use and xdist workers, where nobody watches a terminal."""

    def update(self, state: ProgressState) -> None:
        return None

    def finish(self, message: str) -> None:
        return None


class TerminalProgress:
    """Writes progress to a stream: one rewritten line on a tty, sparse lines otherwise.

    `guard` wraps each write (pytest passes a context that suspends output capturing).
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        tty: bool | None = None,
        every_s: float = 600.0,
        guard: Callable[[], object] | None = None,
    ) -> None:
        self._stream = stream or sys.stderr
        self._tty = self._stream.isatty() if tty is None else tty
        self._every_s = every_s
        self._next_t = 0.0
        self._run_id = ""
        self._width = 0
        self._guard = guard

    def update(self, state: ProgressState) -> None:
        if state.run_id != self._run_id:  # a new run (a noop baseline after the agent's) starts
            self._run_id, self._next_t = state.run_id, 0.0  # its own lines from its minute 0
        if self._tty:
            text = state.line()
            self._write("\r" + text.ljust(self._width))
            self._width = len(text)
        elif state.t >= self._next_t:
            self._write(state.line() + "\n")
            self._next_t = (state.t // self._every_s + 1) * self._every_s

    def finish(self, message: str) -> None:
        if self._tty and self._width:
            self._write("\r" + " " * self._width + "\r")
            self._width = 0
        if message:
            self._write(message + "\n")

    def _write(self, text: str) -> None:
        if self._guard is None:
            self._stream.write(text)
            self._stream.flush()
            return
        with self._guard():  # type: ignore[attr-defined]
            self._stream.write(text)
            self._stream.flush()
