"""The baselines run whole short marathons on the twin; the evidence in their bundles shows each
behaves as the paper describes. One run per agent is shared by every test of this file; the
issue's numeric acceptance (oracle >= 85, different rule-baseline scores, Risk < 0.5 on 90-minute
marathons, seeds 1-3) is measured by benchmarks/agents_baselines.py, not here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_marathon.agents.oracle_report import REASONS, explain

from pytest_marathon.config import RunConfig
from pytest_marathon.runner import run_marathon
from pytest_marathon.scoring import score_bundle
from pytest_marathon.scoring.attribution import workload_of

SEED = 2
SCENARIO = "short-5"


def stream(bundle: Path, name: str) -> list[dict]:
    path = bundle / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def executed(bundle: Path) -> list[dict]:
    """Interventions as executed (completion records only say when one took effect)."""
    return [i for i in stream(bundle, "interventions") if i.get("event") != "completed"]


def final_incidents(bundle: Path) -> dict[str, dict]:
    final: dict[str, dict] = {}
    for record in stream(bundle, "reports"):
        final[record["incident_id"]] = record
    return final


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One short marathon per baseline, same seed, scored against the cached noop run (which
    the first run records, and which is the noop baseline's own run)."""
    out = tmp_path_factory.mktemp("bundles")
    cache = tmp_path_factory.mktemp("noop-cache")
    results = {}
    for agent in ("oracle", "runbook", "keep-style"):
        config = RunConfig(app="boutique", agent=agent, seed=SEED, scenario=SCENARIO, out_dir=out)
        results[agent] = run_marathon(config, baseline_cache=cache)
    return results


def test_noop_scores_zero_at_the_full_degradation_it_defines(runs):
    noop = runs["oracle"].noop_bundle
    report = score_bundle(noop, noop)
    assert json.loads((noop / "manifest.json").read_text())["agent"] == "noop"
    assert report["marathon_score"] == 0
    assert report["degradation"]["level_percent"] == pytest.approx(100.0)
    assert stream(noop, "tool_calls") == []


def test_oracle_locates_every_fault_it_correlates_and_is_flagged(runs):
    result = runs["oracle"]
    report = result.score_report
    manifest = json.loads((result.bundle / "manifest.json").read_text())
    assert manifest["agent_flags"]["ground_truth"] is True
    assert report["risk"]["value"] == 0
    assert all(row["located"] for row in report["per_fault"] if row["correlated"])
    assert report["repaired"] > 0, "no repair of the oracle was credited"
    for agent in ("runbook", "keep-style"):
        assert report["marathon_score"] >= runs[agent].score_report["marathon_score"]


def test_each_fault_the_oracle_did_not_handle_has_a_reason_that_is_no_defect(runs):
    """oracle_report.explain on the real bundle: every unhandled fault gets exactly one reason of
    the fixed vocabulary, and none is a defect of the twin, the catalog, the oracle or the scorer."""
    result = runs["oracle"]
    report = result.score_report
    rows = explain(result.bundle, report)
    unhandled = [r["fault_id"] for r in report["per_fault"] if r["outcome"] != "handled"]
    assert [r["fault_id"] for r in rows] == unhandled
    assert all(r["reason"] in REASONS and r["kind"] == REASONS[r["reason"]] and r["detail"] for r in rows)
    assert [r for r in rows if r["kind"] == "defect"] == []


def test_runbook_files_one_incident_per_workload_and_acts_once_on_each(runs):
    bundle = runs["runbook"].bundle
    alerts = {a["alert_id"]: a for a in stream(bundle, "alerts")}
    incidents = final_incidents(bundle)
    assert incidents, "the runbook reported nothing"
    for incident in incidents.values():
        workloads = {workload_of(alerts[a]["labels"]) for a in incident["alert_ids"]}
        assert workloads == set(incident["root_cause"]["culprits"])
        assert len(workloads) == 1
    acted = [i["incident_id"] for i in executed(bundle)]
    assert acted and len(acted) == len(set(acted))
    successes = {i["incident_id"] for i in executed(bundle) if i["ok"]}
    resolved = {i for i, rec in incidents.items() if rec["status"] == "resolved"}
    assert resolved <= successes


def test_runbook_opens_a_new_incident_when_a_closed_workloads_alerts_again(runs):
    incidents = final_incidents(runs["runbook"].bundle)
    by_workload: dict[str, list[str]] = {}
    for incident_id, record in sorted(incidents.items()):
        by_workload.setdefault(record["root_cause"]["culprits"][0], []).append(incident_id)
    assert any(len(ids) > 1 for ids in by_workload.values())
    for ids in by_workload.values():  # every incident of a workload but its newest was closed
        assert all(incidents[i]["status"] == "resolved" or i in _failed(runs) for i in ids[:-1])


def _failed(runs) -> set[str]:
    calls = stream(runs["runbook"].bundle, "tool_calls")
    return {c["args"]["incident_id"] for c in calls if c["kind"] == "act" and c["verdict"] != "ok"}


def test_keep_style_places_each_alert_once_and_keeps_incidents_open(runs):
    bundle = runs["keep-style"].bundle
    incidents = final_incidents(bundle)
    placed = [a for rec in incidents.values() for a in rec["alert_ids"]]
    assert placed and len(placed) == len(set(placed))
    assert {rec["status"] for rec in incidents.values()} == {"open"}


def test_rule_baselines_score_above_noop_without_forbidden_actions(runs):
    for agent in ("runbook", "keep-style"):
        report = runs[agent].score_report
        assert report["marathon_score"] > 0
        assert report["forbidden_attempted"] is False
        assert report["risk"]["n_forb"] == 0


@pytest.mark.slow
def test_on_a_full_marathon_the_oracle_leaves_nothing_that_is_a_defect(tmp_path):
    """The 90-minute scenario, where up to 11 faults overlap: every fault the oracle with perfect
    knowledge does not handle is explained by the schedule (no alert in time, no remedy, a repair
    window too short, another fault masking or shadowing its probe), never by the twin, the
    catalog, the oracle or the scorer."""
    result = run_marathon(RunConfig(app="boutique", agent="oracle", seed=1, scenario="marathon", out_dir=tmp_path))
    report = result.score_report
    rows = explain(result.bundle, report)
    assert len(report["per_fault"]) == 60
    assert [r for r in rows if r["kind"] == "defect"] == []
    # a floor, not a target: since the scorer withholds repair credit for faults the no-action
    # run heals by itself (scorer 2.1, `heals-without-remedy` rows), perfect knowledge scores
    # 83.3 on this seed; every point below 100 is one of the limits `explain` lists
    assert report["marathon_score"] >= 80
