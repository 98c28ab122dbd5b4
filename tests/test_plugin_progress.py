"""Live progress in pytest on a terminal, without `-s`: the agent's run and the no-action
baseline a first run has to build (a whole second marathon that used to pass in silence)."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

TINY = Path(__file__).parent / "scenarios" / "tiny-2.yaml"


def run_on_a_terminal(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run with stdout and stderr on a pseudo-terminal, as a person at a shell would."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=follower,
                               stderr=follower, close_fds=True)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process is done
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return process.wait(timeout=600), b"".join(chunks).decode("utf-8", errors="replace")


def test_pytest_shows_the_run_and_its_baseline_live_on_a_terminal(tmp_path: Path) -> None:
    code, screen = run_on_a_terminal(
        [sys.executable, "-m", "pytest", "--marathon-app=boutique", "--agent=runbook",
         f"--marathon-scenario={TINY}", "-p", "no:cacheprovider", "-p", "no:randomly"],
        tmp_path,
    )
    assert code == 0, screen[-3000:]
    lines = re.split(r"[\r\n]+", screen)
    agent = [line for line in lines if re.match(r"boutique-runbook-seed1-\S+: minute", line)]
    baseline = [line for line in lines if re.match(r"boutique-noop-seed1-\S+: minute", line)]
    assert agent and "invocation" in agent[-1], screen[-3000:]
    assert baseline, screen[-3000:]  # the baseline's minutes, not a silent pause


def test_a_log_gets_no_progress_lines(tmp_path: Path) -> None:
    """Without a terminal (CI logs) the plugin stays quiet; pytest's own output is the log."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--marathon-app=boutique", "--agent=noop",
         f"--marathon-scenario={TINY}", "-p", "no:cacheprovider"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert ": minute" not in done.stdout + done.stderr


def test_the_command_line_logs_the_baseline_it_builds(tmp_path: Path) -> None:
    """In a log (no terminal) a line every ten virtual minutes, for the agent's run and then
    for the no-action baseline the first run has to build."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest_marathon", "run", "--app", "boutique", "--agent",
         "runbook", "--seed", "1", "--scenario", str(TINY), "--alerts", "0"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"^boutique-runbook-seed1-\S+: minute +0/", done.stderr, re.M)
    assert re.search(r"^boutique-noop-seed1-\S+: minute +0/", done.stderr, re.M), done.stderr
