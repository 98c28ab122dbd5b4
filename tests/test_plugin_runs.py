"""Marathons as pytest tests, end to end on the twin (a two-fault scenario file, small seeds).

Each test drives pytest in a subprocess through pytester, as a user would, and checks what the
user gets: outcomes, the leaderboard, junit properties, JSON results, gates, saved compares,
`--lf` and `-n 2`. The scenario is a file of the test's own (two faults in ten minutes) so the
plugin's mechanics are exercised at a fraction of a shipped scenario's cost.
"""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
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
RUNBOOK_ID = "marathon[boutique-runbook-seed1-two-faults]"


@pytest.fixture
def shared_cache(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every pytester dir is fresh; write the scenario there and point `.marathon/noop` at one
    cache so each noop baseline of (boutique, scenario, seed) is computed once for the module,
    also across xdist workers."""
    pytester.path.joinpath("two-faults.yaml").write_text(SCENARIO)
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # shared by the workers: the cache's file lock keeps it consistent
    cache = root / "marathon-noop-cache"
    cache.mkdir(exist_ok=True)
    (pytester.path / ".marathon").mkdir()
    (pytester.path / ".marathon" / "noop").symlink_to(cache)
    return cache


def test_run_passes_prints_leaderboard_and_writes_junit_and_json(
    pytester: pytest.Pytester, shared_cache: Path
) -> None:
    result = pytester.runpytest_subprocess(
        *GRID, "--junitxml=out.xml", "--marathon-json=results.json", "-W", "error"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*marathon leaderboard*", "Agent*Score*Corr*Loc*Rep*Risk*",
                                 "runbook*boutique*"])
    tree = ET.parse(pytester.path / "out.xml")
    case = tree.find(f".//testcase[@name='{RUNBOOK_ID}']")
    assert case is not None
    suite = {p.get("name"): p.get("value") for p in tree.find(".//testsuite/properties")}
    run_id = RUNBOOK_ID.removeprefix("marathon[").removesuffix("]")
    for metric in ("score", "correlated", "located", "repaired", "risk", "degradation_pct"):
        assert f"{run_id}.{metric}" in suite
    assert suite["marathon_agents"] == "runbook"
    assert suite["marathon_scenarios"] == "two-faults.yaml"
    data = json.loads((pytester.path / "results.json").read_text())
    (run,) = data["runs"]
    assert run["metrics"]["score"] == float(suite[f"{run_id}.score"])
    assert Path(run["bundle"], "manifest.json").is_file()
    assert sum(run["outcomes"].values()) == 2
    assert data["leaderboard"][0]["means"]["score"] == run["metrics"]["score"]


def test_threshold_fails_naming_metric_value_and_bound(
    pytester: pytest.Pytester, shared_cache: Path
) -> None:
    result = pytester.runpytest_subprocess(*GRID, "--marathon-min-score=101")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*score = * is below the minimum 101 (--marathon-min-score)*"])


def test_save_then_compare_fail_gates_regressions(
    pytester: pytest.Pytester, shared_cache: Path
) -> None:
    saved = pytester.runpytest_subprocess(*GRID, "--marathon-save=base")
    saved.assert_outcomes(passed=1)
    (save,) = (pytester.path / ".marathon" / "saved").glob("0001_base.json")
    document = json.loads(save.read_text())
    assert document["machine_info"]["release"].startswith("pytest-marathon")
    same = pytester.runpytest_subprocess(
        *GRID, "--marathon-compare", "--marathon-compare-fail=score:0"
    )
    same.assert_outcomes(passed=1)
    # pretend the saved run was much better: the same run now regresses beyond the tolerance
    for run in document["runs"].values():
        run["metrics"]["score"] = run["metrics"]["score"] + 50
    save.write_text(json.dumps(document))
    worse = pytester.runpytest_subprocess(
        *GRID, "--marathon-compare=base", "--marathon-compare-fail=score:10%"
    )
    worse.assert_outcomes(failed=1)
    worse.stdout.fnmatch_lines(["*score regressed from * to * (tolerance score:10%*"])


def test_xdist_results_equal_serial(pytester: pytest.Pytester) -> None:
    """Each session starts from an empty baseline cache, so under `-n 2` the two workers race to
    fill it (the noop run seeds it with itself, the runbook run computes it) and must still agree
    with the serial session, where both runs share one process."""
    pytester.path.joinpath("two-faults.yaml").write_text(SCENARIO)
    grid = [*GRID, "--agent=noop"]
    serial = pytester.runpytest_subprocess(*grid, "--marathon-json=serial.json",
                                           "--marathon-bundle-dir=serial")
    serial.assert_outcomes(passed=2)
    shutil.rmtree(pytester.path / ".marathon" / "noop")
    parallel = pytester.runpytest_subprocess(*grid, "-n", "2", "--marathon-json=parallel.json",
                                             "--marathon-bundle-dir=parallel")
    parallel.assert_outcomes(passed=2)

    def comparable(name: str) -> list[dict]:
        runs = json.loads((pytester.path / name).read_text())["runs"]
        digests = []
        for run in runs:
            manifest = json.loads((Path(run.pop("bundle")) / "manifest.json").read_text())
            digests.append({**run, "digest": manifest["content_digest"]})
        return digests

    serial_runs = comparable("serial.json")
    assert [(run["agent"], run["noop_bundle"] is not None) for run in serial_runs] == [
        ("noop", True), ("runbook", True)]
    assert serial_runs == comparable("parallel.json")


def test_last_failed_reruns_only_the_failed_marathon(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("two-faults.yaml").write_text(SCENARIO)
    pytester.makepyfile(test_user="def test_own():\n    pass\n")
    grid = ["--marathon-app=boutique", "--agent=noop", "--marathon-scenario=two-faults.yaml",
            "--marathon-min-score=1"]
    first = pytester.runpytest_subprocess(*grid)
    first.assert_outcomes(passed=1, failed=1)
    again = pytester.runpytest_subprocess(*grid, "--lf", "-v")
    again.assert_outcomes(failed=1, deselected=1)
    again.stdout.fnmatch_lines(["*marathon?boutique-noop-seed1-two-faults? FAILED*"])
    again.stdout.no_fnmatch_line("*test_own*PASSED*")


def test_marathon_fixture_runs_an_agent_object(
    pytester: pytest.Pytester, shared_cache: Path
) -> None:
    pytester.makepyfile(
        test_agent='''
class Idle:
    name = "idle"
    description = "reads the alerts and does nothing"

    def __init__(self):
        self.seen = []

    def invoke(self, ctx):
        self.seen.append((ctx.n, len(ctx.alerts)))
        ctx.tools.call("get_alerts")


def test_idle_agent(marathon):
    agent = Idle()
    result = marathon.run(agent=agent, app="boutique", seed=1, scenario="two-faults.yaml")
    assert result.bundle.joinpath("manifest.json").is_file()
    assert [n for n, _ in agent.seen] == list(range(1, len(agent.seen) + 1))
    assert len(result.faults) == 2
    assert result.metrics["degradation_pct"] is not None
    assert 0 <= result.score <= 100


def test_backend_and_orchestrator(marathon_backend, marathon_orchestrator):
    assert marathon_orchestrator.backend is marathon_backend
    assert marathon_backend.app == "boutique"
'''
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
