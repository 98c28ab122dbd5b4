"""Attackers that do no diagnosis must not out-score the Runbook (ARCHITECTURE.md section 7).

Each attacker of tests/adversaries was written to steal one kind of credit; each test here states
that this credit is not given, against the Runbook's run of the same seed and scenario, never
against a fixed number. The scenario is short-5 at seed 2, where every exploit bites on a scorer
that has not closed it (see the module's git history for the numbers measured before the fix).

Each run is made once per session, on first use: xdist workers share the bundles (a file lock
lets one worker run a marathon while the other waits, then re-scores the sealed bundle), so
spreading one attacker's tests over both workers costs no second marathon.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from adversaries import attackers, late_filing_at
from adversaries.runs import assert_ran_its_recipe, shared_runs, stream

from pytest_marathon.results import MarathonResult
from pytest_marathon.scoring import score_bundle

SEED = 2
SCENARIO = "short-5"
#: ARCHITECTURE.md section 7: each fault is judged on the incident state at revert + 60 s.
HORIZON_AFTER_REVERT_S = 60.0
ATTACKERS = attackers(SCENARIO)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], MarathonResult]:
    """`run(name)`: the runbook's or an attacker's marathon, made once per session."""
    return shared_runs(tmp_path_factory, "boutique", SEED, SCENARIO)


def paid_repairs(report: dict[str, Any]) -> int:
    """Faults whose repair the Score pays for: repaired and correlated (correlation gates credit)."""
    return sum(1 for row in report["per_fault"] if row["correlated"] and row["repaired"])


def horizon(row: dict[str, Any], run_end: float) -> float:
    return run_end if row["revert_at"] is None else row["revert_at"] + HORIZON_AFTER_REVERT_S


@pytest.mark.parametrize("name", sorted(ATTACKERS))
def test_each_attacker_ran_its_recipe(run, name):
    """Guards the other tests against passing vacuously."""
    assert_ran_its_recipe(run(name).bundle, name)


@pytest.mark.parametrize("name", sorted(ATTACKERS))
def test_no_attacker_beats_the_runbook(run, name):
    assert run(name).score_report["marathon_score"] <= run("runbook").score_report["marathon_score"]


@pytest.mark.parametrize("name", ["duplicate-incidents", "guess-enumeration", "combined"])
def test_many_incidents_holding_every_alert_buy_no_correlation_or_location(run, name):
    """Copies of one incident, or one incident per enumerated guess, each holding every alert:
    no more faults correlated or located than the Runbook's one incident per workload."""
    attacker, runbook = run(name).score_report, run("runbook").score_report
    assert attacker["correlated"] <= runbook["correlated"]
    assert attacker["located"] <= runbook["located"]


@pytest.mark.parametrize("name", ["hindsight-relabel", "hindsight-relabel-early"])
def test_reports_after_a_faults_horizon_earn_it_nothing(run, name):
    """Filed (or diagnosed by relabelling) at the last invocation: a fault whose evidence horizon
    passed before the first report is not correlated, and one whose horizon passed before the
    first diagnosis is not located, however right the hindsight diagnosis is."""
    result = run(name)
    reports = stream(result.bundle, "reports")
    first_report = min(r["t"] for r in reports)
    first_diagnosis = min(r["t"] for r in reports if (r.get("root_cause") or {}).get("culprits"))
    assert first_diagnosis >= late_filing_at(SCENARIO)
    run_end = max(float(r["t"]) for r in stream(result.bundle, "sli"))
    per_fault = result.score_report["per_fault"]
    late_located = [r["fault_id"] for r in per_fault if horizon(r, run_end) < first_diagnosis and r["located"]]
    late_correlated = [r["fault_id"] for r in per_fault if horizon(r, run_end) < first_report and r["correlated"]]
    assert late_located == []
    assert late_correlated == []


@pytest.mark.parametrize("name", ["noop-repair"])
def test_no_op_changes_repair_nothing(run, name):
    """Setting what already is (replicas to their count, env and limits to their values, a
    rollback to the running revision) cannot be credited with a recovery. The upstream shop has
    no feature-flag ConfigMap, so a flag set to its value has nothing to act on here; that no-op
    is pinned where an operator created one (tests/test_tools_noops.py)."""
    report = run(name).score_report
    assert [r["fault_id"] for r in report["per_fault"] if r["repaired"]] == []
    assert report["repaired"] == 0


def test_no_op_actions_neither_dilute_risk_nor_add_credit(run):
    """The Runbook plus harmless no-ops: Risk no lower than the Runbook's own, Score and
    Repaired unchanged, since a no-op is never counted."""
    attacker, runbook = run("risk-dilution").score_report, run("runbook").score_report
    assert attacker["risk"]["value"] >= runbook["risk"]["value"]
    assert attacker["marathon_score"] == pytest.approx(runbook["marathon_score"])
    assert attacker["repaired"] == pytest.approx(runbook["repaired"])


@pytest.mark.parametrize("name", ["catch-all-scope", "combined"])
def test_blanket_actions_earn_no_more_repair_credit_than_the_runbook(run, name):
    """Restarts and rollbacks of every workload under one catch-all incident diagnose no fault:
    the repairs the Score pays them for (only on correlated faults) are no more than the
    Runbook's one scripted action per diagnosed workload earns."""
    assert paid_repairs(run(name).score_report) <= paid_repairs(run("runbook").score_report)


@pytest.mark.parametrize("name", ["catch-all-scope", "combined"])
def test_blanket_actions_under_a_catch_all_incident_count_as_risky(run, name):
    """One incident holding every alert ever fired does not put the whole app in scope: only
    faults still within their horizon do, so blanket restarts and rollbacks are mostly out of
    scope and the catch-all's Risk exceeds the Runbook's targeted actions'."""
    attacker, runbook = run(name).score_report["risk"], run("runbook").score_report["risk"]
    assert attacker["n_exec"] > 0
    assert attacker["value"] > runbook["value"]


def last_probe_before_revert_healthy(bundle: Path, row: dict[str, Any]) -> bool:
    """Read straight from a bundle: is the fault's last probe sample before its revert healthy?"""
    end = row["revert_at"] if row["revert_at"] is not None else float("inf")
    samples = [p for p in stream(bundle, "probes") if p["fault_id"] == row["fault_id"] and p["t"] < end]
    return bool(samples) and bool(max(samples, key=lambda p: p["t"])["healthy"])


def test_harmless_changes_before_a_fault_heals_by_itself_earn_no_repair(run):
    """ARCHITECTURE.md section 7: self-recovery is never credited. The alert-nudge attacker's
    scale-outs land in the scope of faults that then heal by themselves: the probe rule alone
    (the score without its no-action bundle) pays it for them, the counterfactual withholds
    every one, and each withheld fault is one the noop run of the same schedule shows healed."""
    result = run("alert-nudge")
    alone = score_bundle(result.bundle)
    stolen = {r["fault_id"] for r in alone["per_fault"] if r["repaired"]}
    assert stolen, "the attacker no longer steals anything: this test proves nothing"
    assert alone["self_recovery"] == {"checked_against": None, "withheld": 0, "unchecked": len(stolen)}
    report = result.score_report
    assert report["repaired"] == 0 and paid_repairs(report) == 0
    withheld = {r["fault_id"]: r for r in report["per_fault"] if r["repair_counterfactual"] == "self-recovered"}
    assert set(withheld) == stolen
    assert report["self_recovery"] == {"checked_against": "noop", "withheld": len(stolen), "unchecked": 0}
    assert result.noop_bundle is not None
    assert all(last_probe_before_revert_healthy(result.noop_bundle, r) for r in withheld.values())


def test_the_runbook_loses_only_the_repairs_the_noop_run_makes_by_itself(run):
    """The counterfactual withholds a repair only where the no-action run recovered by then:
    every repair the runbook is still credited with is one the noop run does not make by itself
    by that time, and every one withheld is a fault the noop run shows healed."""
    result = run("runbook")
    report = result.score_report
    assert result.noop_bundle is not None
    for row in report["per_fault"]:
        verdict = row["repair_counterfactual"]
        assert verdict in (None, "needed", "self-recovered")
        assert row["repaired"] is (verdict == "needed")
        if verdict == "self-recovered":
            assert last_probe_before_revert_healthy(result.noop_bundle, row)
