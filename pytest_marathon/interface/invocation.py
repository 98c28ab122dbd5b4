"""Running an external agent: a fresh process per invocation, killed at its wall-clock budget.

The process gets its own process group so that everything it spawned dies with it; a crash, a
hang or garbage output ends that invocation only, and the outcome says which it was.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pytest_marathon.seed_salt import without_salt

TAIL_CHARS = 4_000
TERM_GRACE_S = 2.0

Status = Literal["ok", "timeout", "crash", "error"]


@dataclass(frozen=True)
class ProcessOutcome:
    """How one external invocation ended. `error`: it could not be started at all."""

    status: Status
    returncode: int | None
    wall_s: float
    stdout_tail: str
    stderr_tail: str


def _tail(path: Path) -> str:
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - TAIL_CHARS * 4))
        return handle.read().decode("utf-8", errors="replace")[-TAIL_CHARS:]


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the whole group, then SIGKILL whatever is left after a short grace."""
    for sig, wait in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # stragglers that outlived the group leader


def run_process_invocation(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    budget_s: float,
) -> ProcessOutcome:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="marathon-invocation-") as scratch:
        out_path, err_path = Path(scratch, "stdout"), Path(scratch, "stderr")
        with out_path.open("wb") as out, err_path.open("wb") as err:
            try:
                process = subprocess.Popen(
                    list(argv),
                    cwd=cwd,
                    env=without_salt(env),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
            except (OSError, ValueError) as problem:
                return ProcessOutcome("error", None, time.monotonic() - started, "", f"could not start {argv[:1]}: {problem}")
            try:
                returncode: int | None = process.wait(timeout=budget_s)
                status: Status = "ok" if returncode == 0 else "crash"
            except subprocess.TimeoutExpired:
                _kill_group(process)
                returncode = process.returncode
                status = "timeout"
            else:
                _kill_group(process)  # children it left running do not outlive the invocation
        wall = time.monotonic() - started
        return ProcessOutcome(status, returncode, round(wall, 3), _tail(out_path), _tail(err_path))
