"""`python -m pytest_marathon`: the same command line as the `pytest-marathon` script.

A signal while the command is still importing gets the exit code a shell gives it and one quiet
exit, not a traceback or a kill: 130 for Ctrl-C, 143 for SIGTERM (`run` then installs its own
handling, README "Interrupting a run")."""

from __future__ import annotations

import signal
import sys


def _stopped_while_starting(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__" and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
    signal.signal(signal.SIGTERM, _stopped_while_starting)

try:
    from pytest_marathon.cli import main
except KeyboardInterrupt:
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main(prog="python -m pytest_marathon"))
