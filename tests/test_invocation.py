"""External-process invocations: budgets are enforced, and a killed invocation harms no other."""

from __future__ import annotations

import os
import sys
import time

from pytest_marathon.interface import run_process_invocation


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_process_that_sleeps_past_its_budget_is_killed_and_the_next_invocation_runs(tmp_path):
    env = dict(os.environ)
    started = time.monotonic()
    hung = run_process_invocation(
        _python("import time; print('working', flush=True); time.sleep(60)"), cwd=tmp_path, env=env, budget_s=1.0
    )
    assert hung.status == "timeout"
    assert time.monotonic() - started < 10
    assert "working" in hung.stdout_tail

    after = run_process_invocation(
        _python("import pathlib; pathlib.Path('note').write_text('next'); print('done')"),
        cwd=tmp_path,
        env=env,
        budget_s=10.0,
    )
    assert after.status == "ok" and after.returncode == 0
    assert after.stdout_tail.strip() == "done"
    assert (tmp_path / "note").read_text() == "next"  # the workspace persists across invocations


def test_children_of_a_timed_out_agent_die_with_it(tmp_path):
    marker = tmp_path / "child-alive"
    child = f"import time, pathlib; time.sleep(3); pathlib.Path({str(marker)!r}).write_text('x')"
    parent = f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {child!r}]); time.sleep(60)"
    outcome = run_process_invocation(_python(parent), cwd=tmp_path, env=dict(os.environ), budget_s=1.0)
    assert outcome.status == "timeout"
    time.sleep(3.5)
    assert not marker.exists()


def test_crash_and_unstartable_commands_are_reported_not_raised(tmp_path):
    crash = run_process_invocation(
        _python("import sys; print('garbage \\x00 out'); sys.stderr.write('boom'); sys.exit(3)"),
        cwd=tmp_path,
        env=dict(os.environ),
        budget_s=10.0,
    )
    assert crash.status == "crash" and crash.returncode == 3
    assert "boom" in crash.stderr_tail

    missing = run_process_invocation(
        [str(tmp_path / "no-such-agent")], cwd=tmp_path, env=dict(os.environ), budget_s=5.0
    )
    assert missing.status == "error" and missing.returncode is None
    assert "no-such-agent" in missing.stderr_tail
