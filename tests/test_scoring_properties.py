"""Properties of the scorer over random runs recorded through the Recorder."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_marathon.bundle import Recorder, read_bundle
from pytest_marathon.scoring import score_bundle

WORKLOADS = ["frontend", "cartservice", "checkoutservice", "paymentservice", "redis-cart"]
MANIFEST = {
    "release": "pytest-marathon test",
    "app": "boutique",
    "scenario": "random",
    "seed": 3,
    "agent": "random",
    "agent_flags": {},
    "config": {},
    "backend": "twin",
}
PROPERTY_SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@st.composite
def runs(draw: st.DrawFn) -> dict[str, list[dict[str, Any]]]:
    """A random but well-formed run: faults, alerts, reports, actions, probes, SLI, calls."""
    streams: dict[str, list[dict[str, Any]]] = {}
    n_faults = draw(st.integers(1, 5))
    faults = []
    for index in range(n_faults):
        scope = sorted(draw(st.sets(st.sampled_from(WORKLOADS), min_size=1, max_size=3)))
        culprit = draw(st.sampled_from(scope))
        inject = float(draw(st.integers(0, 20)) * 60)
        revert = inject + float(draw(st.integers(4, 12)) * 60)
        faults.append(
            {
                "fault_id": f"f{index + 1:02d}",
                "catalog_id": "c",
                "category": "code",
                "mechanism": "change",
                "target": culprit,
                "culprits": [culprit],
                "artifact": f"image:{culprit}",
                "aliases": [f"deploy:{culprit}"],
                "scope": scope,
                "probe": {},
                "inject_at": inject,
                "revert_at": revert,
                "remedy": "rollback",
            }
        )
    streams["schedule"] = faults
    alert_ids = [f"a{i}" for i in range(draw(st.integers(0, 12)))]
    streams["alerts"] = [
        {
            "t": fired,
            "event": "firing",
            "alert_id": alert_id,
            "alertname": "X",
            "labels": {"namespace": "boutique", "service": draw(st.sampled_from(WORKLOADS))},
            "annotations": {},
            "value": 1.0,
            "active_at": fired,
            "fired_at": fired,
        }
        for alert_id in alert_ids
        for fired in [float(draw(st.integers(0, 130)) * 15)]
    ]
    incidents = [f"I{i}" for i in range(draw(st.integers(1, 5)))]
    reports = []
    for seq in range(draw(st.integers(0, 12))):
        culprit = draw(st.sampled_from(WORKLOADS))
        reports.append(
            {
                "t": float(draw(st.integers(1, 20)) * 120),
                "invocation": 0,
                "seq": seq,
                "incident_id": draw(st.sampled_from(incidents)),
                "alert_ids": sorted(draw(st.sets(st.sampled_from(alert_ids or ["none"])))),
                "status": "open",
                "root_cause": {
                    "culprits": [culprit],
                    "category": "code",
                    "text": "",
                    "artifact": draw(
                        st.sampled_from([f"image:{culprit}", f"deploy:{culprit}", None])
                    ),
                },
            }
        )
    for report in reports:
        report["invocation"] = int(report["t"] // 120)
    streams["reports"] = reports
    interventions, calls = [], []
    for seq in range(draw(st.integers(0, 8))):
        t = float(draw(st.integers(1, 20)) * 120)
        target = draw(st.sampled_from(WORKLOADS))
        interventions.append(
            {
                "t": t,
                "invocation": int(t // 120),
                "seq": 100 + seq,
                "tool": "restart_service",
                "target": target,
                "targets": [target],
                "incident_id": draw(st.sampled_from(incidents)),
                "params": {},
                "ok": True,
                "changed": draw(st.booleans()),
                "completed_at": t + draw(st.sampled_from([10.0, 60.0, 200.0])),
            }
        )
    for seq in range(draw(st.integers(0, 8))):
        calls.append(
            {
                "t": float(draw(st.integers(1, 20)) * 120),
                "invocation": 0,
                "seq": 200 + seq,
                "tool": "get_logs",
                "kind": draw(st.sampled_from(["read", "act", "report"])),
                "args": {},
                "verdict": draw(st.sampled_from(["ok", "error", "refused", "forbidden"])),
                "error": None,
                "result_chars": 1,
                "wall_ms": 2,
            }
        )
    for call in calls:
        call["invocation"] = int(call["t"] // 120)
    streams["interventions"], streams["tool_calls"] = interventions, calls
    seed = draw(st.integers(0, 10_000))
    chooser = random.Random(seed)
    streams["probes"] = [
        {
            "t": fault["inject_at"] + 15.0 * k,
            "fault_id": fault["fault_id"],
            "healthy": chooser.random() < 0.6,
            "artifact_corrected": chooser.random() < 0.3,
        }
        for fault in faults
        for k in range(int((fault["revert_at"] - fault["inject_at"]) // 15))
    ]
    streams["sli"] = [
        {"t": 5.0 * k, "q": chooser.uniform(0, 20), "e": chooser.random(), "l": chooser.random()}
        for k in range(40)
    ]
    streams["invocations"] = [
        {
            "n": n,
            "t": 120.0 * n,
            "status": "ok",
            "wall_s": 1.0,
            "model_calls": 1,
            "input_tokens": 10,
            "output_tokens": 1,
            "cost_usd": 0.01,
        }
        for n in range(1, 6)
    ]
    return streams


def _record(directory: Path, streams: dict[str, list[dict[str, Any]]]) -> Path:
    with Recorder(directory, MANIFEST) as recorder:
        for name, records in streams.items():
            for record in records:
                recorder.append(name, record)
    return directory


def _without_incident_names(result: dict[str, Any]) -> dict[str, Any]:
    """The score minus what legitimately depends on names and line order."""
    result = {**result, "run": {**result["run"], "content_digest": None}}
    result["per_fault"] = [{**row, "incident_id": None} for row in result["per_fault"]]
    return result


@PROPERTY_SETTINGS
@given(run=runs())
def test_scores_stay_in_range(tmp_path_factory, run):
    result = score_bundle(_record(tmp_path_factory.mktemp("r") / "b", run))
    assert 0.0 <= result["marathon_score"] <= 100.0
    for stage in ("correlated", "located", "repaired"):
        assert 0.0 <= result[stage] <= 1.0
    assert result["repaired"] <= 1.0 and result["located"] <= result["correlated"]
    assert 0.0 <= result["risk"]["value"] <= 1.0
    assert sum(result["outcomes"].values()) == result["faults"]


@PROPERTY_SETTINGS
@given(run=runs())
def test_one_incident_for_every_alert_correlates_at_most_one_fault(tmp_path_factory, run):
    every_alert = sorted(a["alert_id"] for a in run["alerts"])
    run["reports"] = [
        {
            "t": 2400.0,
            "invocation": 20,
            "seq": 0,
            "incident_id": "everything",
            "alert_ids": every_alert,
            "status": "open",
            "root_cause": {"culprits": [], "artifact": None, "category": "", "text": ""},
        }
    ]
    result = score_bundle(_record(tmp_path_factory.mktemp("r") / "b", run))
    assert result["correlated"] <= 1 / result["faults"]


@PROPERTY_SETTINGS
@given(run=runs(), shuffle_seed=st.integers(0, 2**32 - 1))
def test_relabelling_incidents_and_reordering_streams_changes_nothing(
    tmp_path_factory, run, shuffle_seed
):
    original = score_bundle(_record(tmp_path_factory.mktemp("r") / "b", run))
    chooser = random.Random(shuffle_seed)
    names = sorted(
        {r["incident_id"] for r in run["reports"]}
        | {i["incident_id"] for i in run["interventions"]}
    )
    fresh = [f"renamed-{chooser.randrange(10**6)}-{k}" for k in range(len(names))]
    chooser.shuffle(fresh)
    rename = dict(zip(names, fresh))
    changed = {}
    for name, records in run.items():
        records = [dict(r) for r in records]
        for record in records:
            if "incident_id" in record:
                record["incident_id"] = rename[record["incident_id"]]
        chooser.shuffle(records)
        changed[name] = records
    relabelled = score_bundle(_record(tmp_path_factory.mktemp("r") / "b", changed))
    assert _without_incident_names(relabelled) == _without_incident_names(original)


@PROPERTY_SETTINGS
@given(run=runs())
def test_rescoring_is_repeatable(tmp_path_factory, run):
    directory = _record(tmp_path_factory.mktemp("r") / "b", run)
    assert score_bundle(directory) == score_bundle(read_bundle(directory))


def _best_matching_by_enumeration(n_faults, edges, preference):
    """The section 7 matching by brute force: maximum cardinality; then, fault by fault in
    injection order, the most preferred incident (the one that first held its alert). Diagnoses
    play no part."""
    best_key, best = None, {}
    incidents = sorted(preference, key=preference.get)

    def visit(row, used, chosen):
        nonlocal best_key, best
        if row == n_faults:
            key = (
                -len(chosen),
                tuple(preference[chosen[r]] if r in chosen else len(incidents) for r in range(n_faults)),
            )
            if best_key is None or key < best_key:
                best_key, best = key, dict(chosen)
            return
        visit(row + 1, used, chosen)
        for incident in incidents:
            if (row, incident) in edges and incident not in used:
                visit(row + 1, used | {incident}, {**chosen, row: incident})

    visit(0, frozenset(), {})
    return best


@PROPERTY_SETTINGS
@given(
    n_faults=st.integers(1, 4),
    n_incidents=st.integers(1, 4),
    data=st.data(),
)
def test_matching_is_the_lexicographic_optimum(tmp_path_factory, n_faults, n_incidents, data):
    incidents = [f"INC-{k + 1}" for k in range(n_incidents)]
    pairs = [(r, i) for r in range(n_faults) for i in incidents]
    edges = set(data.draw(st.sets(st.sampled_from(pairs))))
    diagnosis = {i: data.draw(st.sampled_from([None, *range(n_faults)])) for i in incidents}
    filing_order = data.draw(st.permutations(incidents))
    streams: dict[str, list[dict[str, Any]]] = {"schedule": [], "alerts": [], "reports": []}
    for r in range(n_faults):
        workload = f"svc{r}"
        streams["schedule"].append(
            {
                "fault_id": f"f{r}",
                "culprits": [workload],
                "artifact": f"image:{workload}",
                "aliases": [],
                "scope": [workload],
                "inject_at": 60.0 * r,
                "revert_at": 2000.0,
            }
        )
    for seq, incident in enumerate(filing_order):
        alert_ids = sorted(f"a-{r}-{incident}" for r, i in edges if i == incident)
        for alert_id in alert_ids:
            r = int(alert_id.split("-")[1])
            streams["alerts"].append(
                {
                    "t": 60.0 * r + 10,
                    "event": "firing",
                    "alert_id": alert_id,
                    "labels": {"namespace": "boutique", "service": f"svc{r}"},
                    "fired_at": 60.0 * r + 10,
                }
            )
        culprit = diagnosis[incident]
        streams["reports"].append(
            {
                "t": 600.0,
                "invocation": 5,
                "seq": seq,
                "incident_id": incident,
                "alert_ids": alert_ids,
                "status": "open",
                "root_cause": {
                    "culprits": [] if culprit is None else [f"svc{culprit}"],
                    "artifact": None if culprit is None else f"image:svc{culprit}",
                },
            }
        )
    result = score_bundle(_record(tmp_path_factory.mktemp("m") / "b", streams))
    preference = {incident: filing_order.index(incident) for incident in incidents}
    expected = _best_matching_by_enumeration(n_faults, edges, preference)
    assert {
        int(row["fault_id"][1:]): row["incident_id"]
        for row in result["per_fault"]
        if row["incident_id"] is not None
    } == expected
    assert [row["located"] for row in result["per_fault"]] == [
        expected.get(r) is not None and diagnosis[expected[r]] == r for r in range(n_faults)
    ]


def _numbers(result: dict[str, Any]) -> dict[str, Any]:
    """The credits and their times, without diagnostics (which do count what an agent filed)."""
    return {key: value for key, value in _without_incident_names(result).items() if key != "diagnostics"}


@PROPERTY_SETTINGS
@given(run=runs(), copies=st.integers(1, 4))
def test_copies_of_incidents_never_raise_correlation_or_location(tmp_path_factory, run, copies):
    original = score_bundle(_record(tmp_path_factory.mktemp("r") / "b", run))
    duplicated = [dict(r) for r in run["reports"]]
    for report in run["reports"]:
        for k in range(copies):
            duplicated.append({**report, "incident_id": f"{report['incident_id']}-copy{k}",
                               "seq": report["seq"] + 1000 * (k + 1)})
    result = score_bundle(_record(tmp_path_factory.mktemp("r") / "b", {**run, "reports": duplicated}))
    assert sum(r["correlated"] for r in result["per_fault"]) <= sum(
        r["correlated"] for r in original["per_fault"]
    )
    assert sum(r["located"] for r in result["per_fault"]) <= sum(
        r["located"] for r in original["per_fault"]
    )


@PROPERTY_SETTINGS
@given(run=runs(), data=st.data())
def test_a_no_op_change_never_changes_repair_or_risk(tmp_path_factory, run, data):
    original = score_bundle(_record(tmp_path_factory.mktemp("r") / "b", run))
    noops = [
        {
            "t": float(data.draw(st.integers(1, 20)) * 120),
            "invocation": 0,
            "seq": 500 + k,
            "tool": data.draw(st.sampled_from(["scale_service", "set_feature_flag", "rollback_service"])),
            "target": target,
            "targets": [target],
            "incident_id": data.draw(st.sampled_from(["I0", "I1", "I9"])),
            "params": {},
            "ok": True,
            "changed": False,
            "completed_at": None,
        }
        for k in range(data.draw(st.integers(1, 6)))
        for target in [data.draw(st.sampled_from(WORKLOADS))]
    ]
    with_noops = {**run, "interventions": run["interventions"] + noops}
    result = score_bundle(_record(tmp_path_factory.mktemp("r") / "b", with_noops))
    assert result["diagnostics"]["noop_changes"] == original["diagnostics"]["noop_changes"] + len(noops)
    assert _numbers(result) == _numbers(original)


@PROPERTY_SETTINGS
@given(run=runs(), data=st.data())
def test_reports_after_every_horizon_change_no_number(tmp_path_factory, run, data):
    original = score_bundle(_record(tmp_path_factory.mktemp("r") / "b", run))
    horizon = max(f["revert_at"] for f in run["schedule"]) + 60
    alert_ids = [a["alert_id"] for a in run["alerts"]] or ["none"]
    late = [
        {
            "t": horizon + 5 + 120 * k,
            "invocation": 99 + k,
            "seq": 0,
            "incident_id": data.draw(st.sampled_from(["I0", "I1", "late"])),
            "alert_ids": sorted(data.draw(st.sets(st.sampled_from(alert_ids)))),
            "status": "resolved",
            "root_cause": {"culprits": [data.draw(st.sampled_from(WORKLOADS))],
                           "artifact": f"image:{data.draw(st.sampled_from(WORKLOADS))}"},
        }
        for k in range(data.draw(st.integers(1, 5)))
    ]
    relabelled = {**run, "reports": run["reports"] + late}
    result = score_bundle(_record(tmp_path_factory.mktemp("r") / "b", relabelled))
    # the late records lengthen the recorded run, so only the time bins may grow
    assert {**_numbers(result), "bins": None} == {**_numbers(original), "bins": None}
