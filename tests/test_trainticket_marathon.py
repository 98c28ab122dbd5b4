"""Marathons on Train Ticket through the plugin, as a user runs them: the runbook and the oracle
on the small two-fault scenario. The oracle's bundle must leave no fault unhandled for a reason
that is a defect (agents/oracle_report.py), which is how a scorer that reads the wrong
namespace (the app runs in `train-ticket`) or a probe that never meets its fault shows up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_sessions import prepare_session
from pytest_marathon.agents.oracle_report import explain

from pytest_marathon.scoring import score_bundle

pytest_plugins = ["pytester"]

SEED = 3


def test_runbook_and_oracle_marathons_run_and_the_oracle_meets_no_defect(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    prepare_session(pytester, tmp_path_factory)
    result = pytester.runpytest_subprocess(
        "--marathon-app=trainticket", "--agent=runbook", "--agent=oracle",
        f"--marathon-seed={SEED}", "--marathon-scenario=two-faults.yaml",
        "--marathon-json=results.json", "-p", "no:cacheprovider",
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*marathon leaderboard*", "*oracle*trainticket*",
                                 "*runbook*trainticket*"])
    runs = {run["agent"]: run for run in json.loads((pytester.path / "results.json").read_text())["runs"]}
    oracle = Path(runs["oracle"]["bundle"])
    assert json.loads((oracle / "manifest.json").read_text())["namespace"] == "train-ticket"
    (noop,) = (pytester.path / ".marathon" / "noop").glob(f"*/trainticket-two-faults-seed{SEED}-twin-*/")
    report = score_bundle(oracle, noop=noop)
    alerted = [row for row in report["per_fault"] if row["attributable_alerts"]]
    assert alerted, "no fault of the run alerted: the scenario proves nothing"
    assert all(row["correlated"] and row["located"] for row in alerted)
    assert [row for row in explain(oracle, report) if row["kind"] == "defect"] == []
    assert runs["oracle"]["metrics"]["score"] >= runs["runbook"]["metrics"]["score"]
