"""Re-running one marathon as a user does after a failure: paste the id pytest printed. Also: two
`cmd:` agents with one interpreter are two distinct items (and bundle folders), and a re-run
keeps the bundle it replaces as `<run id>.prev`."""

from __future__ import annotations

import os
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
        "--marathon-seed=1-2", "-p", "no:cacheprovider"]
SEED2 = "marathon[boutique-runbook-seed2-two-faults]"


@pytest.fixture
def project(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytester.path.joinpath("two-faults.yaml").write_text(SCENARIO)
    pytester.makepyfile(test_user="def test_own():\n    pass\n")
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    cache = root / "marathon-noop-cache"
    cache.mkdir(exist_ok=True)
    (pytester.path / ".marathon").mkdir()
    (pytester.path / ".marathon" / "noop").symlink_to(cache)
    return pytester.path


def test_a_pasted_id_selects_that_marathon_alone(pytester: pytest.Pytester, project: Path) -> None:
    chosen = pytester.runpytest_subprocess(*GRID, "--collect-only", "-q", SEED2)
    assert chosen.ret == 0, chosen.stderr.str()
    assert [line for line in chosen.outlines if "::" in line or "[" in line] == [SEED2]
    with_file = pytester.runpytest_subprocess(*GRID, "--collect-only", "-q", SEED2,
                                              "test_user.py")
    assert [line for line in with_file.outlines if "::" in line or "[" in line] == [
        "test_user.py::test_own", SEED2]
    whole = pytester.runpytest_subprocess(*GRID, "--collect-only", "-q", "marathon")
    assert sum(line.startswith("marathon[") for line in whole.outlines) == 2
    assert not any("test_own" in line for line in whole.outlines)
    typo = pytester.runpytest_subprocess(*GRID, "marathon[boutique-runbook-seed9-two-faults]")
    assert typo.ret == pytest.ExitCode.USAGE_ERROR
    assert "not found: marathon[boutique-runbook-seed9-two-faults]" in typo.stderr.str()
    assert SEED2 in typo.stderr.str()  # the ids there are, to paste instead


def test_rerunning_a_seed_keeps_the_bundle_it_replaces(
    pytester: pytest.Pytester, project: Path
) -> None:
    bundle = project / ".marathon" / "bundles" / "boutique-runbook-seed2-two-faults"
    seed2 = [arg for arg in GRID if not arg.startswith("--marathon-seed")] + ["--marathon-seed=2"]
    first = pytester.runpytest_subprocess(*seed2)
    first.assert_outcomes(passed=2)  # the marathon and the user's own test
    first.stdout.no_fnmatch_line("*.prev*")
    stamp = (bundle / "manifest.json").read_bytes()
    (bundle / "note.txt").write_text("the first run")
    again = pytester.runpytest_subprocess(*seed2)
    again.assert_outcomes(passed=2)
    again.stdout.fnmatch_lines([f"*earlier bundle of {bundle.name} was kept as {bundle}.prev*"])
    previous = bundle.with_name(bundle.name + ".prev")
    assert (previous / "note.txt").read_text() == "the first run"
    assert (previous / "manifest.json").read_bytes() == stamp
    assert not (bundle / "note.txt").exists()
    assert not (project / ".marathon" / "bundles" / "boutique-runbook-seed1-two-faults").exists()


def test_two_cmd_agents_with_one_interpreter_get_distinct_stable_ids(
    pytester: pytest.Pytester,
) -> None:
    agents = [f"--agent=cmd:{sys.executable} agent.py --mode fast",
              f"--agent=cmd:{sys.executable} agent.py --mode slow",
              f"--agent=cmd:{sys.executable} other.py"]
    grid = ["--marathon-app=boutique", "--collect-only", "-q", "-p", "no:cacheprovider"]
    first = pytester.runpytest_subprocess(*grid, *agents)
    assert first.ret == 0, first.stderr.str()
    ids = [line for line in first.outlines if line.startswith("marathon[")]
    assert len(ids) == len(set(ids)) == 3
    assert sum("-agent.py-" in i for i in ids) == 2 and sum("-other.py-" in i for i in ids) == 1
    again = pytester.runpytest_subprocess(*grid, *reversed(agents))
    assert sorted(line for line in again.outlines if line.startswith("marathon[")) == sorted(ids)
