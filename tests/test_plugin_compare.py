"""Saved runs and comparisons as a user meets them: a chosen storage folder, saves that say when
and from which commit they were made, an old-vs-new table, a visible warning for a run with
nothing to compare against, the spread across seeds, and the same saves from the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SCENARIO = """\
name: two-faults
description: Two faults in ten minutes, for tests of the plugin's mechanics
warmup_s: 300
injection_window_s: 600
observation_s: 300
arrivals: 2
intensity: {start: 1.0, end: 1.0}
lifetime_s: {min: 240, max: 360}
max_concurrent: 2
"""
GRID = ["--marathon-app=boutique", "--agent=runbook", "--marathon-scenario=two-faults.yaml",
        "-p", "no:cacheprovider"]


@pytest.fixture
def project(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git work tree with the scenario file and one commit; the noop-baseline cache is shared
    by the module's sessions."""
    pytester.path.joinpath("two-faults.yaml").write_text(SCENARIO)
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    cache = root / "marathon-noop-cache"
    cache.mkdir(exist_ok=True)
    (pytester.path / ".marathon").mkdir()
    (pytester.path / ".marathon" / "noop").symlink_to(cache)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=pytester.path, check=True)
    subprocess.run([*git, "add", "two-faults.yaml"], cwd=pytester.path, check=True)
    subprocess.run([*git, "commit", "-qm", "scenario"], cwd=pytester.path, check=True)
    return pytester.path


def _head(folder: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_compare_prints_old_and_new_warns_when_unmatched_and_shows_spread(
    pytester: pytest.Pytester, project: Path
) -> None:
    saved = pytester.runpytest_subprocess(*GRID, "--marathon-save=base",
                                          "--marathon-storage=store")
    saved.assert_outcomes(passed=1)
    (save,) = (project / "store").iterdir()  # one flat folder, not one per OS/Python version
    assert save.name == "0001_base.json"
    document = json.loads(save.read_text())
    assert document["commit"] == _head(project)
    assert document["dirty"] is False
    assert document["saved_at"].endswith("Z") and document["saved_at"][:2] == "20"

    again = pytester.runpytest_subprocess(
        *GRID, "--marathon-seed=1-2", "--marathon-storage=store", "--marathon-compare",
        "--marathon-json=results.json",
    )
    again.assert_outcomes(passed=2, warnings=1)
    again.stdout.fnmatch_lines([
        "*marathon compare: saved (old) → this session (new)*",
        f"compared with *0001_base.json (saved {document['saved_at']}, commit {_head(project)[:12]})",
        "Run*Score*Corr*",
        "runbook boutique two-faults.yaml seed 1 * → * (+0.0)*",
        "runbook boutique two-faults.yaml seed 2*no saved run*",
        "WARNING: 1 run(s) had no saved counterpart*seed 2*",
    ])
    again.stdout.fnmatch_lines([
        "*MarathonCompareWarning: --marathon-compare: 0001_base.json has no run of runbook "
        "boutique two-faults.yaml seed 2*",
    ])
    again.stdout.fnmatch_lines(["spread across seeds: mean ± stdev (min–max)",
                                "Agent*App*Runs*Score*", "runbook*boutique*2* ± *(*–*)*"])
    (row,) = json.loads((project / "results.json").read_text())["leaderboard"]
    spread = row["spread"]["score"]
    assert spread["n"] == 2
    assert spread["min"] <= spread["mean"] <= spread["max"]
    assert spread["stdev"] >= 0


def test_the_cli_saves_and_compares_in_the_same_storage(
    pytester: pytest.Pytester, project: Path
) -> None:
    pytester.runpytest_subprocess(
        *GRID, "--marathon-save=base", "--marathon-storage=store"
    ).assert_outcomes(passed=1)
    cli = [sys.executable, "-m", "pytest_marathon.cli", "run", "--app", "boutique",
           "--agent", "runbook", "--scenario", "two-faults.yaml", "--alerts", "0",
           "--storage", "store"]
    bad = subprocess.run([*cli, "--seed", "1", "--save", "no good"], cwd=project,
                         capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "bad save name 'no good'" in bad.stderr
    done = subprocess.run([*cli, "--seed", "1-2", "--compare", "base", "--save", "cli"],
                          cwd=project, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "compared with store/0001_base.json" in done.stdout
    assert "runbook boutique two-faults.yaml seed 1  " in done.stdout  # compared, old → new
    assert " → " in done.stdout
    assert "no saved run" in done.stdout
    assert "warning: 0001_base.json has no run of runbook boutique two-faults.yaml seed 2" in (
        done.stderr)
    assert sorted(p.name for p in (project / "store").iterdir()) == [
        "0001_base.json", "0002_cli.json"]
    cli_save = json.loads((project / "store" / "0002_cli.json").read_text())
    assert len(cli_save["runs"]) == 2  # one save for all seeds of the command
    assert cli_save["commit"] == _head(project)
