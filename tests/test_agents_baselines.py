"""The baselines run whole (short) marathons on the twin; the evidence in their bundles shows
each behaves as the paper describes and scores where a baseline should."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_marathon.agents.oracle_report import explain

from pytest_marathon.config import RunConfig
from pytest_marathon.runner import run_marathon
from pytest_marathon.scoring.attribution import workload_of

SEED = 2
SCENARIO = "short-5"


def stream(bundle: Path, name: str) -> list[dict]:
    path = bundle / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def final_incidents(bundle: Path) -> dict[str, dict]:
    final: dict[str, dict] = {}
    for record in stream(bundle, "reports"):
        final[record["incident_id"]] = record
    return final


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One short marathon per baseline, same seed, scored against the cached noop run."""
    out = tmp_path_factory.mktemp("bundles")
    cache = tmp_path_factory.mktemp("noop-cache")
    results = {}
    for agent in ("noop", "oracle", "runbook", "keep-style"):
        config = RunConfig(app="boutique", agent=agent, seed=SEED, scenario=SCENARIO, out_dir=out)
        results[agent] = run_marathon(config, baseline_cache=cache)
    return results


def test_noop_scores_zero_at_the_full_degradation_it_defines(runs):
    report = runs["noop"].score_report
    assert report["marathon_score"] == 0
    assert report["degradation"]["level_percent"] == pytest.approx(100.0)
    assert stream(runs["noop"].bundle, "tool_calls") == []


def test_oracle_scores_high_and_every_unhandled_fault_has_a_reason(runs):
    result = runs["oracle"]
    report = result.score_report
    assert report["marathon_score"] >= 85
    manifest = json.loads((result.bundle / "manifest.json").read_text())
    assert manifest["ground_truth_agent"] is True
    rows = explain(result.bundle, report)
    unhandled = [r for r in report["per_fault"] if r["outcome"] != "handled"]
    assert [r["fault_id"] for r in rows] == [r["fault_id"] for r in unhandled]
    assert all(r["reason"] and "scorer disagreement" not in r["reason"] for r in rows)
    assert report["risk"]["value"] == 0


def test_runbook_files_one_incident_per_workload_and_acts_once_on_each(runs):
    bundle = runs["runbook"].bundle
    alerts = {a["alert_id"]: a for a in stream(bundle, "alerts")}
    incidents = final_incidents(bundle)
    assert incidents, "the runbook reported nothing"
    for incident in incidents.values():
        workloads = {workload_of(alerts[a]["labels"]) for a in incident["alert_ids"]}
        assert workloads == set(incident["root_cause"]["culprits"])
        assert len(workloads) == 1
    acted = [i["incident_id"] for i in stream(bundle, "interventions")]
    assert len(acted) == len(set(acted))
    successes = {i["incident_id"] for i in stream(bundle, "interventions") if i["ok"]}
    resolved = {i for i, rec in incidents.items() if rec["status"] == "resolved"}
    assert resolved <= successes


def test_keep_style_places_each_alert_once_and_keeps_incidents_open(runs):
    bundle = runs["keep-style"].bundle
    incidents = final_incidents(bundle)
    placed = [a for rec in incidents.values() for a in rec["alert_ids"]]
    assert placed and len(placed) == len(set(placed))
    assert {rec["status"] for rec in incidents.values()} == {"open"}


def test_rule_baselines_score_between_noop_and_oracle_with_low_risk(runs):
    oracle = runs["oracle"].score_report["marathon_score"]
    scores = {}
    for agent in ("runbook", "keep-style"):
        report = runs[agent].score_report
        scores[agent] = report["marathon_score"]
        assert 0 < report["marathon_score"] < oracle
        assert report["risk"]["value"] < 0.5
        assert report["forbidden_attempted"] is False
    assert scores["runbook"] != scores["keep-style"]
