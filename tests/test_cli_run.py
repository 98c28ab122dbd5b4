"""`pytest-marathon run` and `report` as a user runs them, including Ctrl-C and SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_marathon.cli import main
from pytest_marathon.scoring import score_bundle

RUN = [sys.executable, "-m", "pytest_marathon.cli", "run", "--app", "boutique", "--agent",
       "noop", "--seed", "1", "--scenario", "short-5"]


def test_run_prints_the_scored_summary_as_json(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code = main([*RUN[3:], "--out", str(tmp_path / "b"), "--json",
                 "--baseline-cache", str(tmp_path / "cache")])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"]["score"] == 0
    assert out["metrics"]["degradation_pct"] == 100
    rescored = score_bundle(out["bundle"], noop=out["bundle"])
    assert rescored["marathon_score"] == out["metrics"]["score"]


def test_a_quiet_run_shows_its_alert_history(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code = main(["run", "--app", "boutique", "--agent", "noop", "--seed", "1", "--scenario",
                 "quiet", "--out", str(tmp_path / "b"), "--baseline-cache", str(tmp_path / "c")])
    assert code == 0
    out = capsys.readouterr().out
    history = next(line for line in out.splitlines() if line.startswith("alert history:"))
    fired = int(history.split()[2])
    assert fired <= 2, out  # issue 3: a fault-free 90-minute run raises at most 2 alerts
    assert "fault outcomes: no faults" in out


def test_the_alert_history_lists_what_fired_and_when_it_resolved(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    code = main([*RUN[3:], "--out", str(tmp_path / "b"), "--baseline-cache", str(tmp_path / "c"),
                 "--alerts", "3"])
    assert code == 0
    out = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(out) if line.startswith("alert history:"))
    fired = int(out[start].split()[2])
    assert fired > 3
    rows = out[start + 1:start + 4]
    assert all(row.split()[0].endswith("s") and ("resolved at" in row or "still firing" in row)
               for row in rows), rows
    assert out[start + 4].strip().startswith(f"... {fired - 3} more")


def test_unknown_app_is_a_clear_error(capsys: pytest.CaptureFixture) -> None:
    assert main(["run", "--app", "shop", "--agent", "noop", "--seed", "1"]) == 2
    assert "unknown app 'shop'; choose one of: astronomy, boutique" in capsys.readouterr().err


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_interrupted_run_leaves_a_valid_incomplete_bundle(
    tmp_path: Path, signum: int, code: int
) -> None:
    out = tmp_path / "bundles"
    process = subprocess.Popen([*RUN, "--out", str(out)], stderr=subprocess.PIPE, text=True)
    sli = out / "boutique-noop-seed1-short-5" / "sli.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not sli.exists() or sli.stat().st_size < 2000):
        time.sleep(0.05)
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == code, err
    manifest = json.loads((sli.parent / "manifest.json").read_text())
    assert manifest["status"] == "incomplete"
    assert manifest["incomplete_reason"] in ("SIGTERM", "interrupted (SIGINT)")
    assert "incomplete bundle at" in err
    scored = score_bundle(sli.parent, allow_incomplete=True)
    assert scored["run"]["complete"] is False
