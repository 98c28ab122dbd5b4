"""Each reading of ARCHITECTURE.md section 7 pinned by a pair of bundles that differ in one fact.

Every test scores two small hand-made bundles, one that earns a credit and one that differs only
in the fact the rule is about, so that a one-line change to the rule fails here: the evidence
horizon, the alert partition, the matching's indifference to diagnoses, and the five conditions
of a verified repair (a no-op, a target outside P_f, an action after the fault recovered by
itself, a completion at the revert, a relapse before the revert, cleanup after it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.bundle import Recorder
from pytest_marathon.scoring import ScoreRefusal, score_bundle

MANIFEST = {
    "release": "pytest-marathon test",
    "app": "boutique",
    "scenario": "rules",
    "seed": 1,
    "agent": "scripted",
    "agent_flags": {},
    "config": {},
    "backend": "twin",
}
INJECT, REVERT = 90.0, 705.0  # one fault on cartservice, probes every 15 s from inject; horizon 765 s


def fault(fault_id: str = "f01", workload: str = "cartservice", inject: float = INJECT,
          revert: float = REVERT) -> dict[str, Any]:
    return {
        "fault_id": fault_id,
        "catalog_id": f"c-{workload}",
        "category": "deployment",
        "culprits": [workload],
        "artifact": f"image:{workload}",
        "aliases": [],
        "scope": [workload],
        "inject_at": inject,
        "revert_at": revert,
    }


def alert(alert_id: str, workload: str = "cartservice", fired: float = 130.0) -> dict[str, Any]:
    return {
        "t": fired,
        "event": "firing",
        "alert_id": alert_id,
        "labels": {"namespace": "boutique", "service": workload},
        "fired_at": fired,
    }


def report(t: float, incident: str, alerts: list[str], seq: int = 1, culprit: str | None = None,
           item: int = 0) -> dict[str, Any]:
    return {
        "t": t,
        "invocation": int(t // 120),
        "seq": seq,
        "item": item,
        "incident_id": incident,
        "alert_ids": alerts,
        "status": "open",
        "root_cause": {
            "culprits": [] if culprit is None else [culprit],
            "artifact": None if culprit is None else f"image:{culprit}",
        },
    }


def action(t: float, completed: float | None, *, targets: list[str] | None = None,
           changed: bool = True, incident: str = "INC-1", seq: int = 50) -> dict[str, Any]:
    targets = ["cartservice"] if targets is None else targets
    return {
        "t": t,
        "invocation": int(t // 120),
        "seq": seq,
        "tool": "rollback_service",
        "target": targets[0] if len(targets) == 1 else None,
        "targets": targets,
        "incident_id": incident,
        "params": {},
        "ok": True,
        "changed": changed,
        "completed_at": completed,
    }


def probes(healthy_at: Any, corrected_at: Any = None, fault_id: str = "f01",
           start: float = INJECT, end: float = REVERT + 60) -> list[dict[str, Any]]:
    corrected_at = corrected_at or healthy_at
    samples, t = [], start
    while t <= end:
        samples.append({"t": t, "fault_id": fault_id, "healthy": healthy_at(t),
                        "artifact_corrected": corrected_at(t)})
        t += 15.0
    return samples


def score(tmp_path: Path, name: str, **streams: list[dict[str, Any]]) -> dict[str, Any]:
    streams.setdefault("schedule", [fault()])
    streams.setdefault("alerts", [alert("A1")])
    with Recorder(tmp_path / name, MANIFEST) as recorder:
        for stream, records in streams.items():
            for record in records:
                recorder.append(stream, record)
    return score_bundle(tmp_path / name)


def row(result: dict[str, Any], fault_id: str = "f01") -> dict[str, Any]:
    return next(r for r in result["per_fault"] if r["fault_id"] == fault_id)


# the run's namespace ---------------------------------------------------------------------------
def _scored_in(tmp_path: Path, name: str, manifest: dict[str, Any], namespace: str) -> dict[str, Any]:
    labelled = {**alert("A1"), "labels": {"namespace": namespace, "service": "cartservice"}}
    with Recorder(tmp_path / name, manifest) as recorder:
        recorder.append("schedule", fault())
        recorder.append("alerts", labelled)
        recorder.append("reports", report(240, "INC-1", ["A1"], culprit="cartservice"))
    return score_bundle(tmp_path / name)


def test_only_alerts_of_the_namespace_the_run_recorded_are_a_faults(tmp_path):
    recorded = {**MANIFEST, "namespace": "shop"}
    assert row(_scored_in(tmp_path, "own", recorded, "shop"))["correlated"] is True
    assert row(_scored_in(tmp_path, "other", recorded, "boutique"))["correlated"] is False


def test_a_bundle_without_a_recorded_namespace_reads_the_apps_name(tmp_path):
    """Bundles from before the manifest carried the namespace ran apps named as their namespace."""
    assert row(_scored_in(tmp_path, "name", MANIFEST, "boutique"))["correlated"] is True
    assert row(_scored_in(tmp_path, "other", MANIFEST, "shop"))["correlated"] is False


# evidence horizon ------------------------------------------------------------------------------
def test_a_report_counts_up_to_the_horizon_and_never_after(tmp_path):
    on_time = score(tmp_path, "on", reports=[report(REVERT + 60, "INC-1", ["A1"], culprit="cartservice")])
    late = score(tmp_path, "late", reports=[report(REVERT + 65, "INC-1", ["A1"], culprit="cartservice")])
    assert (row(on_time)["correlated"], row(on_time)["located"]) == (True, True)
    assert (row(late)["correlated"], row(late)["located"]) == (False, False)
    assert late["diagnostics"]["reports_after_horizon"] == 1
    assert on_time["diagnostics"]["reports_after_horizon"] == 0


def test_relabelling_after_the_horizon_changes_nothing_the_fault_earned(tmp_path):
    filed = report(240, "INC-1", ["A1"], culprit="frontend")
    fixed_late = report(1200, "INC-1", ["A1"], seq=2, culprit="cartservice")
    fixed_in_time = report(720, "INC-1", ["A1"], seq=2, culprit="cartservice")
    assert row(score(tmp_path, "late", reports=[filed, fixed_late]))["located"] is False
    assert row(score(tmp_path, "in-time", reports=[filed, fixed_in_time]))["located"] is True


def test_a_fault_never_reverted_is_judged_at_the_run_end(tmp_path):
    schedule = [{**fault(), "revert_at": None}]
    result = score(tmp_path, "open", schedule=schedule,
                   reports=[report(3000, "INC-1", ["A1"])],
                   sli=[{"t": 3600.0, "q": 1.0, "e": 0.0, "l": 0.0}])
    assert row(result)["correlated"] is True


# partition -----------------------------------------------------------------------------------
def test_an_alert_reported_under_another_incident_moves_there(tmp_path):
    # two faults, each with one alert; copies of one incident holding both alerts match one fault
    schedule = [fault(), fault("f02", "paymentservice", inject=110.0)]
    alerts = [alert("A1"), alert("A2", "paymentservice", 140.0)]
    copies = [report(240, f"COPY-{k}", ["A1", "A2"], seq=k) for k in range(5)]
    result = score(tmp_path, "copies", schedule=schedule, alerts=alerts, reports=copies)
    assert result["correlated"] == 0.5
    assert row(result)["incident_id"] == "COPY-4"  # the last report holds both alerts
    split = [report(240, "INC-1", ["A1"], seq=1), report(240, "INC-2", ["A2"], seq=2)]
    assert score(tmp_path, "split", schedule=schedule, alerts=alerts, reports=split)["correlated"] == 1.0


def test_an_alert_taken_away_before_the_horizon_no_longer_correlates(tmp_path):
    moved_away = [report(240, "INC-1", ["A1"]), report(360, "INC-1", [], seq=2)]
    assert row(score(tmp_path, "emptied", reports=moved_away))["correlated"] is False


# matching ------------------------------------------------------------------------------------
def test_the_matching_never_looks_at_diagnoses(tmp_path):
    # one fault, two alerts; the incident filed first guessed wrong, a later one guessed right:
    # the first holder wins, so many guesses cannot buy a located match
    alerts = [alert("A1"), alert("A2", fired=140.0)]
    reports = [report(240, "GUESS-B", ["A1"], seq=1, culprit="frontend"),
               report(360, "GUESS-A", ["A2"], seq=1, culprit="cartservice")]
    result = score(tmp_path, "guesses", alerts=alerts, reports=reports)
    assert row(result)["incident_id"] == "GUESS-B"
    assert (row(result)["correlated"], row(result)["located"]) == (True, False)
    assert result["diagnostics"]["incident_precision"] == 0.5


def test_ties_are_broken_by_position_in_the_call_then_natural_then_raw_id(tmp_path):
    alerts = [alert("A1"), alert("A2", fired=140.0)]
    same_call = [report(240, "INC-2", ["A1"], item=1), report(240, "INC-10", ["A2"], item=0)]
    assert row(score(tmp_path, "item", alerts=alerts, reports=same_call))["incident_id"] == "INC-10"
    no_item = [report(240, "INC-02", ["A1"]), report(240, "INC-2", ["A2"])]
    assert row(score(tmp_path, "raw", alerts=alerts, reports=no_item))["incident_id"] == "INC-02"


def test_scores_are_byte_identical_under_any_hash_seed(tmp_path):
    alerts = [alert("A1"), alert("A2", fired=140.0)]
    reports = [report(240, "INC-2", ["A1"]), report(240, "INC-02", ["A2"])]
    score(tmp_path, "tie", alerts=alerts, reports=reports)
    outputs = set()
    for hash_seed in ("0", "1", "4242"):
        outputs.add(subprocess.run(
            [sys.executable, "-m", "pytest_marathon.cli", "score", "--json", str(tmp_path / "tie")],
            capture_output=True, check=True, env={**os.environ, "PYTHONHASHSEED": hash_seed},
        ).stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop())["per_fault"][0]["incident_id"] == "INC-02"


# repair --------------------------------------------------------------------------------------
FIXED_AT_480 = probes(lambda t: t >= 480)


def repaired(tmp_path: Path, name: str, actions: list[dict[str, Any]],
             samples: list[dict[str, Any]] = FIXED_AT_480) -> bool:
    result = score(tmp_path, name, reports=[report(240, "INC-1", ["A1"])],
                   interventions=actions, probes=samples)
    return row(result)["repaired"]


def test_a_change_issued_while_failing_that_holds_until_the_revert_repairs(tmp_path):
    assert repaired(tmp_path, "base", [action(360, 450)])


def test_a_no_op_never_repairs(tmp_path):
    assert not repaired(tmp_path, "noop", [action(360, 450, changed=False)])


def test_a_change_must_target_the_fault_scope(tmp_path):
    assert not repaired(tmp_path, "elsewhere", [action(360, 450, targets=["frontend"])])
    assert not repaired(tmp_path, "nothing", [action(360, 450, targets=[])])
    assert repaired(tmp_path, "several", [action(360, 450, targets=["cartservice", "frontend"])])


def test_a_fault_that_recovered_by_itself_is_not_credited_to_a_later_action(tmp_path):
    assert not repaired(tmp_path, "after", [action(480, 490)])


def test_a_symptom_that_comes_and_goes_is_still_failing_during_a_healthy_blip(tmp_path):
    # healthy 300-390 (a blip), failing again until the fix takes effect at 480
    blip_then_fixed = probes(lambda t: 300 <= t < 400 or t >= 480)
    assert repaired(tmp_path, "blip", [action(360, 450)], blip_then_fixed)


def test_a_change_completing_at_the_revert_is_cleanup_not_repair(tmp_path):
    failing = probes(lambda t: t >= REVERT)
    assert not repaired(tmp_path, "at-revert", [action(600, REVERT)], failing)
    assert repaired(tmp_path, "before", [action(600, REVERT - 20)], probes(lambda t: t >= REVERT - 15))


def test_the_probe_must_stay_healthy_until_the_revert(tmp_path):
    relapse = probes(lambda t: 480 <= t < REVERT - 30)
    assert not repaired(tmp_path, "relapse", [action(360, 450)], relapse)


def test_a_short_healthy_span_before_the_revert_still_counts(tmp_path):
    # the last sample before the revert alone is healthy: no minimum span beyond "remains"
    last_sample = probes(lambda t: t >= REVERT - 15)
    assert repaired(tmp_path, "short", [action(600, 660)], last_sample)


def test_samples_after_the_revert_are_never_read(tmp_path):
    healthy_only_after = probes(lambda t: t >= REVERT)
    assert not repaired(tmp_path, "cleanup", [action(360, 450)], healthy_only_after)


def test_a_never_failing_probe_needs_the_artifact_corrected_while_it_was_faulty(tmp_path):
    corrected = probes(lambda t: True, lambda t: t >= 480)
    assert repaired(tmp_path, "artifact", [action(360, 450)], corrected)
    assert not repaired(tmp_path, "already", [action(480, 490)], corrected)
    never = probes(lambda t: True, lambda t: False)
    assert not repaired(tmp_path, "never", [action(360, 450)], never)


def test_a_repair_time_is_the_first_healthy_sample_after_completion(tmp_path):
    result = score(tmp_path, "time", reports=[report(240, "INC-1", ["A1"])],
                   interventions=[action(360, 450)], probes=FIXED_AT_480)
    assert row(result)["time_to_repair_s"] == 480 - INJECT


def test_a_relapse_after_the_change_moves_the_repair_to_the_final_healthy_stretch(tmp_path):
    # healthy at 480 right after the change, failing again 540-585, healthy from 600 to the
    # revert: "healthy at some sample >= c and at every later one" first holds at 600, not 480
    relapse_then_healthy = probes(lambda t: 480 <= t < 540 or t >= 600)
    result = score(tmp_path, "relapse-time", reports=[report(240, "INC-1", ["A1"])],
                   interventions=[action(360, 450)], probes=relapse_then_healthy)
    assert row(result)["repaired"] is True
    assert row(result)["time_to_repair_s"] == 600 - INJECT


# self-recovery: the no-action run of the same schedule is the counterfactual ------------------
NOOP_MANIFEST = {**MANIFEST, "agent": "noop"}


def against_noop(tmp_path: Path, name: str, noop_samples: list[dict[str, Any]] | None,
                 samples: list[dict[str, Any]] = FIXED_AT_480,
                 noop_schedule: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The agent's run (a change at 360 s, done at 450 s) scored against a no-action bundle
    whose probes of the same fault are `noop_samples` (None: scored without a baseline)."""
    streams = {"schedule": [fault()], "alerts": [alert("A1")],
               "reports": [report(240, "INC-1", ["A1"])],
               "interventions": [action(360, 450)], "probes": samples}
    with Recorder(tmp_path / name, MANIFEST) as recorder:
        for stream, records in streams.items():
            for record in records:
                recorder.append(stream, record)
    if noop_samples is None:
        return score_bundle(tmp_path / name)
    with Recorder(tmp_path / f"{name}-noop", NOOP_MANIFEST) as recorder:
        for record in noop_schedule or [fault()]:
            recorder.append("schedule", record)
        for record in noop_samples:
            recorder.append("probes", record)
    return score_bundle(tmp_path / name, noop=tmp_path / f"{name}-noop")


def verdict(result: dict[str, Any]) -> tuple[bool, str | None]:
    return row(result)["repaired"], row(result)["repair_counterfactual"]


def test_a_recovery_the_no_action_run_shows_at_the_same_sample_is_self_recovery(tmp_path):
    # the agent's world and the no-action world both turn healthy at 480 s: the change at 360 s
    # happened to come before a fault that heals by itself (an OOM-killed pod restarting)
    result = against_noop(tmp_path, "same", probes(lambda t: t >= 480))
    assert verdict(result) == (False, "self-recovered")
    assert result["repaired"] == 0 and result["timing"]["mttr"]["n"] == 0
    assert row(result)["outcome"] == "acted-not-repaired"
    assert result["self_recovery"] == {"checked_against": "noop", "withheld": 1, "unchecked": 0}


def test_a_recovery_sooner_than_the_no_action_runs_is_the_agents_repair(tmp_path):
    # one sample later without the agent: the change brought the recovery forward
    assert verdict(against_noop(tmp_path, "later", probes(lambda t: t >= 495))) == (True, "needed")
    assert verdict(against_noop(tmp_path, "earlier", probes(lambda t: t >= 465))) == (
        False, "self-recovered")


def test_a_fault_that_fails_until_the_revert_without_the_agent_was_repaired(tmp_path):
    result = against_noop(tmp_path, "until-revert", probes(lambda t: t >= REVERT))
    assert verdict(result) == (True, "needed")
    assert row(result)["time_to_repair_s"] == 480 - INJECT
    assert result["self_recovery"] == {"checked_against": "noop", "withheld": 0, "unchecked": 0}


def test_a_no_action_recovery_that_relapses_before_the_revert_is_not_for_good(tmp_path):
    relapsing = probes(lambda t: 300 <= t < REVERT - 60)
    assert verdict(against_noop(tmp_path, "relapse", relapsing)) == (True, "needed")


def test_the_no_action_runs_samples_after_the_revert_are_never_read(tmp_path):
    # healed by itself from 465 s until the revert; what its probe reads after the revert (the
    # cleanup, or another fault's aftermath) cannot turn that into a repair of the agent's
    failing_after_revert = probes(lambda t: 465 <= t < REVERT)
    assert verdict(against_noop(tmp_path, "after-revert", failing_after_revert)) == (
        False, "self-recovered")


def test_a_symptom_the_no_action_run_never_shows_is_judged_on_the_artifact(tmp_path):
    # without action the probe never fails (another fault hides its signature, or nothing
    # exercises it), so, as for any fault whose symptom was never observed, the agent's change
    # must have corrected the artifact, sooner than the no-action run's artifact corrects itself
    no_symptom = probes(lambda t: True, lambda t: False)
    symptom_gone_artifact_kept = probes(lambda t: t >= 480, lambda t: False)
    assert verdict(against_noop(tmp_path, "came-and-went", no_symptom,
                                samples=symptom_gone_artifact_kept)) == (False, "self-recovered")
    assert verdict(against_noop(tmp_path, "corrected", no_symptom)) == (True, "needed")
    restarted_alone = probes(lambda t: True, lambda t: t >= 480)
    assert verdict(against_noop(tmp_path, "corrected-alone", restarted_alone)) == (
        False, "self-recovered")


def test_a_never_failing_probe_is_compared_on_the_artifact(tmp_path):
    corrected = probes(lambda t: True, lambda t: t >= 480)
    alone = against_noop(tmp_path, "artifact-alone", probes(lambda t: True, lambda t: t >= 480),
                         samples=corrected)
    kept = against_noop(tmp_path, "artifact-kept", probes(lambda t: True, lambda t: False),
                        samples=corrected)
    assert verdict(alone) == (False, "self-recovered")
    assert verdict(kept) == (True, "needed")


def test_without_a_baseline_the_probe_rule_alone_credits_and_the_score_says_so(tmp_path):
    result = against_noop(tmp_path, "alone", None)
    assert verdict(result) == (True, "unchecked")
    assert result["self_recovery"] == {"checked_against": None, "withheld": 0, "unchecked": 1}
    shown = subprocess.run([sys.executable, "-m", "pytest_marathon", "score", str(tmp_path / "alone")],
                           capture_output=True, text=True, check=True).stdout
    assert "self-recovery" in shown and "NOT CHECKED" in shown


def test_a_baseline_that_stopped_before_the_fault_ended_leaves_it_unchecked(tmp_path):
    stopped = probes(lambda t: t >= 480, end=500)
    assert verdict(against_noop(tmp_path, "stopped", stopped)) == (True, "unchecked")


def test_a_baseline_that_played_another_schedule_is_refused(tmp_path):
    other = [fault(inject=INJECT + 15)]
    with pytest.raises(ScoreRefusal, match="not the same schedule"):
        against_noop(tmp_path, "other", probes(lambda t: t >= REVERT), noop_schedule=other)


# risk ----------------------------------------------------------------------------------------
def risk_of(tmp_path: Path, name: str, actions: list[dict[str, Any]],
            reports: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    reports = [report(240, "INC-1", ["A1"])] if reports is None else reports
    return score(tmp_path, name, reports=reports, interventions=actions, probes=FIXED_AT_480)["risk"]


def test_no_ops_neither_add_risk_nor_dilute_it(tmp_path):
    risky = [action(360, 450, targets=["frontend"], seq=50)]
    noops = [action(360, None, changed=False, targets=["cartservice"], seq=51 + k) for k in range(5)]
    alone, diluted = risk_of(tmp_path, "alone", risky), risk_of(tmp_path, "diluted", risky + noops)
    assert (alone["value"], alone["n_exec"]) == (1.0, 1)
    assert diluted == alone


def test_an_action_is_judged_on_its_incident_as_it_stood_then(tmp_path):
    later_regrouped = [report(240, "INC-1", []), report(480, "INC-1", ["A1"], seq=2)]
    assert risk_of(tmp_path, "before", [action(360, 450)], later_regrouped)["n_out"] == 1
    assert risk_of(tmp_path, "after", [action(600, 650)], later_regrouped)["n_out"] == 0


def test_a_change_is_in_scope_only_when_all_it_touches_is(tmp_path):
    assert risk_of(tmp_path, "all", [action(360, 450, targets=["cartservice"])])["n_out"] == 0
    assert risk_of(tmp_path, "some", [action(360, 450, targets=["cartservice", "frontend"])])["n_out"] == 1
    assert risk_of(tmp_path, "none", [action(360, 450, targets=[])])["n_out"] == 1


def test_a_catch_all_incident_cannot_also_keep_its_alerts_elsewhere(tmp_path):
    # the catch-all took A1 from INC-1: actions citing INC-1 are now out of scope
    reports = [report(240, "INC-1", ["A1"], seq=1), report(240, "ALL", ["A1"], seq=2)]
    assert risk_of(tmp_path, "moved", [action(360, 450, incident="INC-1")], reports)["n_out"] == 1
    assert risk_of(tmp_path, "cites-all", [action(360, 450, incident="ALL")], reports)["n_out"] == 0


def test_an_intervention_without_changed_is_refused(tmp_path):
    record = action(360, 450)
    del record["changed"]
    with pytest.raises(Exception, match="changed"):
        score(tmp_path, "old", interventions=[record])


def test_an_incident_whose_faults_are_past_their_horizon_puts_nothing_in_scope(tmp_path):
    assert risk_of(tmp_path, "live", [action(REVERT + 55, REVERT + 100)])["n_out"] == 0
    assert risk_of(tmp_path, "stale", [action(REVERT + 65, REVERT + 100)])["n_out"] == 1
