"""The orchestrator against the real twin: faults go in and come out on schedule, through the
release pipeline or a Chaos Toolkit experiment, and probes are sampled only for active faults."""

from __future__ import annotations

import pytest

from pytest_marathon.backends import create_backend
from pytest_marathon.faults import Orchestrator, load_catalog, schedule_for
from pytest_marathon.faults.phrasing import code_subject
from pytest_marathon.faults.scenario import load_scenario
from pytest_marathon.faults.schedule import Schedule, ScheduledFault


@pytest.fixture(scope="module")
def catalog():
    return load_catalog("boutique")


def drive(backend, orchestrator, until, on_sample=None):
    """The runner's loop in miniature: step the orchestrator, then tick the twin."""
    injected = []
    t = backend.now
    while t < until:
        t = round(t + backend.tick_seconds, 6)
        injected += orchestrator.step(t)
        backend.advance_to(t)
        if on_sample and t % 15 == 0:
            on_sample(t)
    return injected


def single(entry, inject_at, revert_at):
    scenario = load_scenario("short-5")
    return Schedule("boutique", scenario, 0, (ScheduledFault("f01", entry, inject_at, revert_at),))


def test_step_injects_and_reverts_exactly_the_scheduled_faults(catalog):
    schedule = schedule_for("boutique", "short-5", 4, catalog)
    backend = create_backend("boutique", 4)
    orchestrator = Orchestrator(backend, schedule)
    seen_active: list[tuple[float, list[str], list[str]]] = []

    def check(t):
        active = [f.fault_id for f in orchestrator.active()]
        expected = [f.fault_id for f in schedule.active_at(t)]
        seen_active.append((t, active, expected))
        samples = orchestrator.probe_samples(t)
        assert [s["fault_id"] for s in samples] == active
        assert all(set(s) == {"t", "fault_id", "healthy", "artifact_corrected"} for s in samples)

    end = max(f.revert_at for f in schedule.faults) + 30
    injected = drive(backend, orchestrator, end, check)
    orchestrator.finish()
    assert injected == schedule.records()
    assert all(active == expected for _, active, expected in seen_active)
    assert any(active for _, active, _ in seen_active)
    history = orchestrator.history()
    assert [h["action"] for h in history].count("inject") == 5
    assert [h["action"] for h in history].count("revert") == 5


def test_a_code_fault_ships_as_an_ordinary_release_and_its_revert_restores_the_image(catalog):
    entry = next(e for e in catalog if e.category == "code" and e.target == "cartservice")
    backend = create_backend("boutique", 2)
    original = backend.artifact_value(f"image:{entry.target}")
    orchestrator = Orchestrator(backend, single(entry, 60.0, 400.0))
    health: list[bool] = []
    drive(backend, orchestrator, 300, lambda t: health.append(orchestrator.probe_samples(t)))
    history = backend.rollout_history(entry.target)
    # worded by the code family's grammar (faults/phrasing.py) around the change's own subject
    assert code_subject(entry.change_cause, entry.target) in history[-1]["change_cause"]
    assert backend.artifact_value(f"image:{entry.target}") != original
    samples = [s for batch in health for s in batch]
    assert samples and not all(s["healthy"] for s in samples)
    drive(backend, orchestrator, 600)
    assert backend.artifact_value(f"image:{entry.target}") == original
    # the revert is an ordinary release: nothing in the history names it an undo
    current = next(r for r in backend.rollout_history(entry.target) if r["current"])
    assert current["change_cause"] and "revert" not in current["change_cause"].lower()
    assert orchestrator.active() == [] and orchestrator.probe_samples(600.0) == []
    assert backend.probe(entry.probe)


def test_a_direct_fault_runs_its_chaos_experiment_and_rolls_it_back(catalog):
    entry = next(
        e
        for e in catalog
        if e.mechanism == "direct" and e.id == "net-partition-frontend-cartservice"
    )
    backend = create_backend("boutique", 3)
    orchestrator = Orchestrator(backend, single(entry, 30.0, 330.0))
    drive(backend, orchestrator, 200)
    assert not backend.probe(entry.probe)
    assert orchestrator.history()[0]["ok"]
    drive(backend, orchestrator, 500)
    assert backend.probe(entry.probe)
    assert [h["action"] for h in orchestrator.history()] == ["inject", "revert"]
    assert all(h["ok"] for h in orchestrator.history())


def test_a_remedy_that_removes_the_variable_the_fault_set_reads_corrected():
    """Train Ticket's services read their store host from application.yml's default unless the
    pod sets SPRING_DATA_MONGODB_HOST: the fault sets it, a rollback removes it again. The artifact
    then reads absent (None), which is changed away from the faulty value: a repair made before
    the probe ever failed is judged on the artifact, so reading None as "still faulty" would deny
    it (the oracle's rollbacks on seeds 1 and 2 met this)."""
    entry = next(e for e in load_catalog("trainticket") if e.id == "cfg-store-host-ts-price-service")
    backend = create_backend("trainticket", 1)
    assert backend.artifact_value(entry.artifact) is None  # the chart leaves it to the default
    schedule = Schedule("trainticket", load_scenario("short-5"), 0,
                        (ScheduledFault("f01", entry, 60.0, 900.0),))
    orchestrator = Orchestrator(backend, schedule)
    samples: list[dict] = []
    drive(backend, orchestrator, 120, lambda t: samples.extend(orchestrator.probe_samples(t)))
    assert samples and not any(s["artifact_corrected"] for s in samples)
    assert backend.artifact_value(entry.artifact) is not None
    before = next(r["revision"] for r in backend.rollout_history(entry.target) if not r["current"])
    assert backend.rollback(entry.target, before).ok
    drive(backend, orchestrator, 240, lambda t: samples.extend(orchestrator.probe_samples(t)))
    assert backend.artifact_value(entry.artifact) is None
    assert samples[-1]["artifact_corrected"] is True
    orchestrator.finish()
