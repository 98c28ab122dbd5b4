"""The baselines on a live twin through the tools: a bad config change breaks the frontend, the
agent sees only alerts and tools, and the evidence the session records shows what it did."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pytest_marathon.agents import InvocationContext, resolve_agent

from pytest_marathon.alerting import AlertEngine, load_rule_pack
from pytest_marathon.backends import create_backend
from pytest_marathon.interface import InProcessClient, ToolSession
from pytest_marathon.scoring.attribution import workload_of

DELTA = 120.0
GOOD, BAD = "cartservice:7070", "cartservice:7071"


@dataclass
class World:
    backend: object
    engine: AlertEngine
    session: ToolSession
    records: list = field(default_factory=list)
    n: int = 0

    def advance(self, until: float) -> None:
        t = float(self.backend.now)
        while t < until:
            t = round(t + self.backend.tick_seconds, 6)
            self.backend.advance_to(t)
            if t % 15 == 0:
                self.engine.evaluate(t)

    def break_frontend(self) -> None:
        self.backend.release("frontend", env={"CART_SERVICE_ADDR": BAD}, change_cause="move cart port")

    def invoke(self, spec: str, workspace: Path, ground_truth=None) -> None:
        """One invocation Δ after the last, by a freshly built agent (state only in the workspace)."""
        self.n += 1
        t = self.n * DELTA
        self.advance(t)
        self.session.begin_invocation(self.n, t)
        ctx = InvocationContext(
            n=self.n, t=t, alerts=self.engine.history(), tools=InProcessClient(self.session),
            workspace=workspace, budget_s=110.0, deadline=time.monotonic() + 110.0,
            ground_truth=ground_truth,
        )
        resolve_agent(spec).invoke(ctx)
        self.session.end_invocation()

    def stream(self, name: str) -> list[dict]:
        return [record for stream, record in self.records if stream == name]

    def final_incidents(self) -> dict[str, dict]:
        return {r["incident_id"]: r for r in self.stream("reports")}


def fresh_world(break_frontend: bool = True) -> World:
    """A seed-1 twin at t = 0 with its alert engine and tool session, the frontend broken by a
    bad release unless told otherwise."""
    backend = create_backend("boutique", 1)
    engine = AlertEngine(load_rule_pack("boutique"), backend.store, backend.namespace)
    records: list = []
    session = ToolSession(backend, alerts=engine.history, sink=lambda s, r: records.append((s, dict(r))))
    w = World(backend, engine, session, records)
    w.advance(0.0)
    if break_frontend:
        w.break_frontend()
    return w


@pytest.fixture
def world():
    return fresh_world()


def test_runbook_rolls_back_the_broken_workload_once_and_resolves_it(world, tmp_path):
    for _ in range(4):
        world.invoke("runbook", tmp_path)
    interventions = world.stream("interventions")
    assert [(i["tool"], i["target"], i["ok"]) for i in interventions] == [("rollback_service", "frontend", True)]
    incident = world.final_incidents()[interventions[0]["incident_id"]]
    assert incident["status"] == "resolved"
    assert incident["root_cause"]["culprits"] == ["frontend"]
    assert incident["root_cause"]["artifact"] == "image:frontend"
    assert world.backend.artifact_value("env:frontend/CART_SERVICE_ADDR") == GOOD
    alerts = {a["alert_id"]: a for a in world.engine.history()}
    for record in world.final_incidents().values():
        assert {workload_of(alerts[a]["labels"]) for a in record["alert_ids"]} == set(record["root_cause"]["culprits"])


def test_runbook_opens_a_new_incident_when_a_closed_workload_alerts_again(world, tmp_path):
    for _ in range(3):
        world.invoke("runbook", tmp_path)
    first = world.stream("interventions")[0]["incident_id"]
    assert world.final_incidents()[first]["status"] == "resolved"
    world.break_frontend()
    for _ in range(3):
        world.invoke("runbook", tmp_path)
    frontend = [i for i in world.stream("interventions") if i["target"] == "frontend"]
    assert len(frontend) == 2 and frontend[1]["incident_id"] != first
    assert world.backend.artifact_value("env:frontend/CART_SERVICE_ADDR") == GOOD


def test_keep_style_groups_disjointly_keeps_incidents_open_and_repairs_once(world, tmp_path):
    for _ in range(4):
        world.invoke("keep-style", tmp_path)
    incidents = world.final_incidents()
    placed = [a for r in incidents.values() for a in r["alert_ids"]]
    assert len(placed) == len(set(placed))
    assert {r["status"] for r in incidents.values()} == {"open"}
    frontend = [i for i in world.stream("interventions") if i["target"] == "frontend"]
    assert [(i["tool"], i["ok"]) for i in frontend] == [("rollback_service", True)]
    assert world.backend.artifact_value("env:frontend/CART_SERVICE_ADDR") == GOOD


def test_oracle_reports_the_exact_root_cause_and_applies_the_recorded_remedy(world, tmp_path):
    truth = [
        {
            "fault_id": "f01", "catalog_id": "cfg-port-frontend-cart", "category": "configuration",
            "target": "frontend", "culprits": ["frontend"], "artifact": "env:frontend/CART_SERVICE_ADDR",
            "scope": ["frontend"], "inject_at": 0.0, "revert_at": 900.0,
            "remedy": [{"tool": "rollback_service", "args": {"service": "frontend"}}],
        }
    ]
    for _ in range(3):
        world.invoke("oracle", tmp_path, ground_truth=truth)
    incident = world.final_incidents()["oracle-f01"]
    assert incident["root_cause"]["artifact"] == "env:frontend/CART_SERVICE_ADDR"
    alerts = {a["alert_id"]: a for a in world.engine.history()}
    assert incident["alert_ids"]
    assert all(workload_of(alerts[a]["labels"]) == "frontend" for a in incident["alert_ids"])
    assert [(i["tool"], i["incident_id"]) for i in world.stream("interventions")] == [("rollback_service", "oracle-f01")]
    assert world.backend.artifact_value("env:frontend/CART_SERVICE_ADDR") == GOOD


def test_noop_leaves_the_fault_in_place(world, tmp_path):
    for _ in range(2):
        world.invoke("noop", tmp_path)
    assert world.records == []
    assert world.backend.artifact_value("env:frontend/CART_SERVICE_ADDR") == BAD
