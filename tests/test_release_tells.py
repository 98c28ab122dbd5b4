"""No fault tells in the change history (issue 15, "No fault tells").

A real cluster's rollout history is mostly ordinary releases; the benchmark's must be too, or an
agent learns to distrust every new revision, or a wording, tag or strategy only faults use,
without looking at the system. These tests drive the public pieces (the twin backend, the
orchestrator, the CLI) and read the ground truth a sealed bundle holds (`releases.jsonl`).

Kubernetes behaviour pinned here: a change-cause applied with no template change still reaches
the current ReplicaSet (kubernetes/kubernetes pkg/controller/deployment/sync.go,
getNewReplicaSet -> SetNewReplicaSetAnnotations).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.backends import create_backend
from pytest_marathon.faults import Orchestrator, schedule_for
from pytest_marathon.faults.scenario import ScenarioError, load_scenario, scenario_bytes
from pytest_marathon.seed_salt import run_salt

NON_FAULT = ("background", "background-undo", "fault-revert")


def world(scenario: Any, seed: int, *, salt: str | None = None,
          until: float | None = None) -> tuple[Any, list[dict[str, Any]], Any]:
    """The run with nobody acting (the noop marathon's world): backend, release ground truth,
    schedule."""
    schedule = schedule_for("boutique", scenario, seed, salt=salt)
    backend = create_backend("boutique", seed)
    orchestrator = Orchestrator(backend, schedule)
    records: list[dict[str, Any]] = []
    t, end = -schedule.scenario.warmup_s, schedule.scenario.duration_s if until is None else until
    while t < end:
        t += backend.tick_seconds
        orchestrator.step(t)
        records += orchestrator.take_releases()
        backend.advance_to(t)
    orchestrator.finish()
    return backend, records + orchestrator.take_releases(), schedule


def short(n: int = 12) -> Any:
    return dataclasses.replace(load_scenario("short-10"), background_releases=n)


def test_initial_revisions_and_every_release_carry_an_ordinary_change_cause() -> None:
    backend, records, _ = world(short(), 3)
    for workload in backend.workloads():
        history = backend.rollout_history(workload)
        assert all(r["change_cause"] for r in history), workload
        assert not any(r["change_cause"].lower().startswith("revert") for r in history)
    assert {r["origin"] for r in records} >= {"background", "fault", "fault-revert"}
    assert all(r["change_cause"] for r in records if r["created"])
    assert not any("revert" in (r["change_cause"] or "").lower() for r in records)


def test_background_releases_never_touch_a_service_a_fault_holds() -> None:
    """A benign release must not change what a fault does: none lands on a faulted service."""
    _, records, schedule = world(short(20), 5, until=1500.0)
    background = [r for r in records if r["origin"].startswith("background")]
    assert len(background) >= 8
    for r in background:
        for f in schedule.faults:
            assert not (f.entry.target == r["target"] and f.inject_at <= r["t"] <= f.revert_at), (
                r, f.fault_id)


def test_background_releases_do_no_harm() -> None:
    """Thirty ordinary releases on a fault-free cluster: no failed or slow request at all (a
    Recreate flip replaces no pod; its undo rolls the next version out under RollingUpdate)."""
    scenario = dataclasses.replace(load_scenario("quiet"), injection_window_s=1200.0,
                                   observation_s=300.0, background_releases=30)
    backend, records, _ = world(scenario, 1)
    assert sum(r["origin"] == "background" for r in records) >= 20
    assert any(r["strategy"] == "Recreate" for r in records)
    assert all(r["ok"] for r in records)
    assert all(s.e == 0 and s.l == 0 for s in backend.sli_samples() if s.t >= 0)


def test_releases_are_drawn_from_the_seed_and_the_salt() -> None:
    first = world(short(), 4, until=600.0)[1]
    assert first == world(short(), 4, until=600.0)[1]
    salted = world(short(), 4, salt=run_salt("x" * 32, "boutique", "short-10", 4), until=600.0)[1]
    assert [r["change_cause"] for r in salted] != [r["change_cause"] for r in first]


def test_the_scenario_key_sets_the_count_and_zero_is_the_papers_schedule(tmp_path: Path) -> None:
    assert load_scenario("marathon").background_releases > 0
    assert schedule_for("boutique", short(0), 1).background == ()
    assert len(schedule_for("boutique", short(7), 1).background) == 7
    text = scenario_bytes("short-5").decode()
    bad = tmp_path / "bad.yaml"
    bad.write_text(re.sub(r"background_releases: \d+", "background_releases: -1", text))
    with pytest.raises(ScenarioError, match="background_releases"):
        load_scenario(bad)
    legacy = tmp_path / "legacy.yaml"
    legacy.write_text(re.sub(r"background_releases: \d+\n", "", text))
    assert load_scenario(legacy).background_releases == 0


def _tag_shape(image: str | None) -> str:
    tag = (image or "").partition(":")[2]
    return re.sub(r"-[0-9a-f]{7}$", "-<build>", tag)


@pytest.mark.slow
def test_the_noop_marathon_history_does_not_tell_faults_apart(tmp_path: Path) -> None:
    """Issue 15 acceptance, on the noop marathon (scenarios/marathon.yaml, noop agent, seed 1):
    more benign revisions than fault revisions, and calling every non-initial revision a fault
    has precision <= 0.5. Then no wording, tag or strategy is the faults' own: every template,
    tag and strategy a fault revision shows, some non-fault revision of the run shows too."""
    from pytest_marathon.cli import main

    out = tmp_path / "out"
    code = main(["run", "--app", "boutique", "--agent", "noop", "--seed", "1",
                 "--scenario", "marathon", "--out", str(out), "--baseline-cache",
                 str(tmp_path / "noop"), "--alerts", "0"])
    assert code == 0
    bundle = next(p for p in out.iterdir() if (p / "releases.jsonl").exists())
    records = [json.loads(line) for line in (bundle / "releases.jsonl").read_text().splitlines()]
    created = Counter(r["origin"] for r in records if r["created"])
    faults = created["fault"]
    benign = created["background"] + created["background-undo"]
    assert faults >= 20 and benign > faults
    precision = faults / sum(created.values())  # "every non-initial revision is a fault"
    assert precision <= 0.5

    fault_rows = [r for r in records if r["origin"] == "fault"]
    other_rows = [r for r in records if r["origin"] in NON_FAULT]
    # tags and strategies: exact, with a build hash abstracted (code changes and rebuilds both
    # get `<version>-<7 hex>`, so the shape is what could tell). Initial images are non-fault.
    other_tags = {_tag_shape(r["image"]) for r in other_rows} | {"v0.10.6"}
    fault_tags = {_tag_shape(r["image"]) for r in fault_rows}
    assert {t for t in fault_tags if not t.endswith("<build>")} <= other_tags
    assert any(t.endswith("<build>") for t in other_tags)
    assert {r["strategy"] for r in fault_rows} <= {r["strategy"] for r in other_rows}


@pytest.mark.slow
def test_no_wording_is_reserved_for_faults() -> None:
    """Faults and ordinary releases of a family draw from one grammar, so their templates have
    one distribution. Bounded check over three noop-marathon worlds (~100 fault and ~400 other
    releases): no template used three or more times by faults is absent from every other
    release. With equal distributions a template of share p drawn 3 times by faults is missed
    by n >= 3x as many other draws with probability (1-p)^n <= e^-9, so a failure means a
    wording that only faults use, not bad luck."""
    fault_use: Counter[str] = Counter()
    other_use: Counter[str] = Counter()
    for seed in (1, 2, 3):
        _, records, _ = world("marathon", seed)
        for r in records:
            if r["template"] is None:
                continue
            (fault_use if r["origin"] == "fault" else other_use)[r["template"]] += 1
    reserved = [t for t, n in fault_use.items() if n >= 3 and other_use[t] == 0]
    assert reserved == []
    assert sum(fault_use.values()) >= 60 and sum(other_use.values()) >= 2 * sum(fault_use.values())


class BenignReverter:
    """Rolls back every service right after a benign release, and nothing else: the agent the
    scorer must not reward (the test hands it the releases; no agent could read them)."""

    name = "benign-reverter"
    description = "undoes ordinary releases"

    def __init__(self, releases: list[dict[str, Any]], schedule: Any) -> None:
        self.releases = releases
        self.schedule = schedule

    def invoke(self, ctx: Any) -> None:
        from pytest_marathon.agents.tooling import call_tool

        ids = sorted({a["alert_id"] for a in ctx.alerts})
        if not ids:
            return None
        call_tool(ctx.tools, "report_incidents",
                  incidents=[{"incident_id": "INC-1", "alert_ids": ids, "status": "open"}])
        for r in self.releases:
            faulted = any(f.entry.target == r["target"] and f.inject_at <= ctx.t <= f.revert_at + 60
                          for f in self.schedule.faults)
            if r["t"] < ctx.t <= r["t"] + 120 and not faulted:
                call_tool(ctx.tools, "rollback_service", service=r["target"], incident_id="INC-1")
        return None


def test_undoing_benign_releases_earns_no_repair_credit(tmp_path: Path) -> None:
    """ARCHITECTURE.md §7 Repaired: an intervention counts only when the fault's probe is healthy
    after it until the revert. Undoing an ordinary release changes state (it is executed and
    counted in Risk) but repairs no fault."""
    from pytest_marathon.config import RunConfig
    from pytest_marathon.runner import run_marathon
    from pytest_marathon.scoring import score_bundle

    scenario = "short-5"
    _, records, schedule = world(scenario, 2)
    benign = [r for r in records if r["origin"] == "background" and r["created"]]
    assert benign
    agent = BenignReverter(benign, schedule)
    config = RunConfig(app="boutique", agent="benign-reverter", seed=2, scenario=scenario,
                       out_dir=tmp_path)
    result = run_marathon(config, agent=agent, baseline_cache=None)
    interventions = [json.loads(line) for line in
                     (result.bundle / "interventions.jsonl").read_text().splitlines()]
    rollbacks = [i for i in interventions if i.get("tool") == "rollback_service" and i["changed"]]
    assert len(rollbacks) >= 2
    # A fault whose symptom ends by itself while the reverter happens to act in its scope passes
    # the probe rule alone; scored against the same seed's no-action bundle (its counterfactual,
    # scoring/counterfactual.py) nothing is credited.
    alone = run_marathon(RunConfig(app="boutique", agent="noop", seed=2, scenario=scenario,
                                   out_dir=tmp_path / "noop"), baseline_cache=None)
    checked = score_bundle(result.bundle, noop=alone.bundle)
    assert checked["self_recovery"]["checked_against"] == "noop"
    assert [r["fault_id"] for r in checked["per_fault"] if r["repaired"]] == []


def test_a_fault_behind_an_equivalent_service_address_is_still_seen() -> None:
    """An ordinary release may point a caller at another DNS name of the same Service
    (`cartservice.<ns>.svc.cluster.local`; kubernetes/dns docs/specification.md, the A record
    `<service>.<ns>.svc.<zone>` and the pod's search path); a later fault on the callee must
    still show in its symptom probe, whose signature names the short address."""
    from pytest_marathon.faults import load_catalog
    from pytest_marathon.faults.orchestrator import release_change

    entry = load_catalog("boutique").get("dep-image-tag-cartservice")
    backend = create_backend("boutique", 1)
    fqdn = f"cartservice.{backend.namespace}.svc.cluster.local:7070"
    backend.release("frontend", env={"CART_SERVICE_ADDR": fqdn}, change_cause="Sync addresses")
    backend.advance_to(60.0)
    assert backend.probe(entry.probe)
    release_change(backend, entry)
    backend.advance_to(240.0)
    assert not backend.probe(entry.probe)


def test_a_strategy_only_apply_makes_no_revision_but_its_cause_reaches_the_current_one() -> None:
    """kubernetes/kubernetes pkg/controller/deployment/sync.go getNewReplicaSet: the existing new
    ReplicaSet gets the Deployment's annotations (SetNewReplicaSetAnnotations), so a Recreate
    flip with a change-cause relabels the current revision without replacing a pod."""
    backend = create_backend("boutique", 1)
    before = backend.rollout_history("emailservice")
    backend.release("emailservice", strategy={"type": "Recreate"},
                    change_cause="Pin emailservice to v0.10.6; use the Recreate strategy")
    after = backend.rollout_history("emailservice")
    assert len(after) == len(before)
    assert [r["revision"] for r in after] == [r["revision"] for r in before]
    current = next(r for r in after if r["current"])
    assert current["change_cause"] == "Pin emailservice to v0.10.6; use the Recreate strategy"
    assert backend.resources("deployments", "emailservice")[0]["spec"]["strategy"]["type"] == "Recreate"


def test_every_catalog_change_has_a_wording_and_no_wording_gives_it_away() -> None:
    """Every change-driven catalog entry words through its family's grammar, and nothing the
    grammar can say trips the catalog's giveaway filter or announces an undo."""
    import random

    from pytest_marathon.faults import load_catalog
    from pytest_marathon.faults.catalog import GIVEAWAY
    from pytest_marathon.faults.phrasing import vocabulary
    from pytest_marathon.faults.release_text import fault_cause

    parts = vocabulary()
    assert not [p for p in parts if GIVEAWAY.search(p) or re.search(r"revert|roll ?back", p, re.I)]
    rng = random.Random(0)
    for entry in load_catalog("boutique"):
        if entry.mechanism == "change":
            cause = fault_cause(entry, f"{entry.target}:v0.10.6", rng)
            assert cause.text and not GIVEAWAY.search(cause.text), entry.id
