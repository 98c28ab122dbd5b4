"""`python -m pytest_marathon`: the same command line as the `pytest-marathon` script.

A signal while the command is still starting gets the exit code a shell gives it and one quiet
line, not a traceback or a kill: 130 for Ctrl-C, 143 for SIGTERM. Once the first module is in,
signals are held until the command line is parsed (`run.stopping.held_while_starting`), then `run`
installs its own handling (README "Interrupting a run")."""

from __future__ import annotations

import signal
import sys


def _stopped_while_starting(signum: int, frame: object) -> None:
    _stop("SIGTERM" if signum == signal.SIGTERM else "SIGINT", 128 + signum)


def _stop(name: str, code: int) -> None:
    """Before `run.stopping` is imported: the same line `stopped_while_starting` prints."""
    print(f"pytest-marathon: interrupted ({name}) while starting", file=sys.stderr)
    raise SystemExit(code)


if __name__ == "__main__" and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
    signal.signal(signal.SIGTERM, _stopped_while_starting)

try:
    from pytest_marathon.run.stopping import held_while_starting, stopped_while_starting
except KeyboardInterrupt:
    _stop("SIGINT", 130)

if __name__ == "__main__":
    with held_while_starting() as starting:
        from pytest_marathon.cli import main
    if starting.pending is not None:
        sys.exit(stopped_while_starting(starting.pending))
    sys.exit(main(prog="python -m pytest_marathon"))
