"""Plug-in agents (`module:Class`) run in a child process under bubblewrap: an intruder that
tries to read the schedule, the live bundle, the catalog, the baseline cache and the user's
home, to write outside its workspace and to reach the runner through `gc`, /proc, a loopback
port or the environment gets nothing, and scores exactly what its honest twin scores. Without
bubblewrap (`MARATHON_SANDBOX=off`) the same intruder leaks, so the test is not vacuous, and in
process it finds the runner's objects in memory.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

import pytest
from intruders.agents import Intruder
from isolation_support import (  # noqa: F401 - no_sandbox is a fixture
    SCENARIO,
    SEED,
    comparable_score,
    manifest,
    need_sandbox,
    no_sandbox,
    scene,
)
from pytest_marathon.agents import resolve_agent

from pytest_marathon.config import RunConfig
from pytest_marathon.isolation.plugin import ChildAgent
from pytest_marathon.results import format_leaderboard, leaderboard
from pytest_marathon.runner import record_marathon, run_marathon

HONEST = "intruders.agents:Honest"
INTRUDER = "intruders.agents:Intruder"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One noop baseline for the module's runs (it is also an intruder's target)."""
    return tmp_path_factory.mktemp("noop-cache")


def test_an_intruder_in_the_sandbox_gets_nothing_and_scores_as_its_honest_twin(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_sandbox()
    with scene(tmp_path, cache, monkeypatch) as where:
        honest, intruder = where.honest_then_intruder(HONEST, INTRUDER, monkeypatch)

    assert intruder.first_failed_invocation is None  # a leak crashes the invocation
    assert intruder.invocations == {"ok": 17}
    assert comparable_score(intruder.score_report) == comparable_score(honest.score_report)
    assert intruder.score > 0
    flags = manifest(intruder.bundle)["agent_flags"]
    assert flags == {"ground_truth": False, "built_in": False, "isolation": "sandbox"}
    assert intruder.verified and honest.verified


def test_without_bubblewrap_the_same_intruder_leaks_but_not_the_runner_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_sandbox: None  # noqa: F811 - the fixture
) -> None:
    (tmp_path / "cache").mkdir()
    with scene(tmp_path, tmp_path / "cache", monkeypatch, catalog_probe=False) as where:
        for folder in (where.out_dir / "boutique-earlier-seed1", where.cache / "noop-earlier"):
            folder.mkdir(parents=True)  # what an earlier run and its baseline leave behind
            (folder / "schedule.jsonl").write_text('{"fault_id": "f-1"}\n')
        config = where.config(INTRUDER)
        monkeypatch.setenv("INTRUDER_TARGETS", json.dumps(where.targets(config)))
        with pytest.warns(UserWarning, match="without a sandbox.*MARATHON_SANDBOX=off"):
            bundle = record_marathon(config, hidden=(where.cache,))
        assert where.landed()  # writes outside the workspace land without the sandbox

    assert manifest(bundle)["agent_flags"]["isolation"] == "process"
    first = json.loads((bundle / "invocations.jsonl").read_text().splitlines()[0])
    leaks = set(first["detail"].split("leaked: ", 1)[1].split(", "))
    assert leaks >= {"schedule", "bundle", "cache", "catalog", "home", "runner_proc", "network"}
    assert "runner_memory" not in leaks  # a child process holds none of the runner's objects
    assert "secret_env" not in leaks  # the salt is never passed on


def test_in_process_the_intruder_finds_the_runner_and_is_unverified(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In process, the intruder's links (plant_links) land in the runner's current directory.
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    with scene(tmp_path, cache, monkeypatch, catalog_probe=False) as where:
        config = where.config("intruder")
        monkeypatch.setenv("INTRUDER_TARGETS", json.dumps(where.targets(config)))
        result = run_marathon(config, agent=Intruder(), baseline_cache=None)
    assert "runner_memory" in result.first_failed_invocation["detail"]
    assert manifest(result.bundle)["agent_flags"]["isolation"] == "in-process"
    assert not result.verified
    assert "intruder (unverified)" in format_leaderboard(leaderboard([result]))


def test_a_runaway_plug_in_is_killed_at_the_budget_and_the_next_invocation_starts_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"runaway-{uuid.uuid4().hex}"
    monkeypatch.setenv("INTRUDER_MARKER", marker)
    config = RunConfig(app="boutique", agent="intruders.agents:Runaway", seed=SEED,
                       scenario=SCENARIO, out_dir=tmp_path, budget_s=3.0)
    bundle = record_marathon(config)
    records = [json.loads(line)
               for line in (bundle / "invocations.jsonl").read_text().splitlines()]
    assert records[0]["status"] == "timeout"
    assert "killed" in records[0]["detail"]
    assert {r["status"] for r in records[1:]} == {"ok"}
    assert records[1]["model_calls"] == 1  # a fresh process: the plug-in's memory started over
    assert _processes_with(marker) == []


def test_resolving_a_plug_in_does_not_import_it_into_the_runner(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "loud_agent.py").write_text(
        "import os\nclass Loud:\n    name = 'loud'\n    description = 'imported where?'\n"
        "    needs_mcp = True\n    def invoke(self, ctx):\n        return None\n"
        "PID = os.getpid()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    agent = resolve_agent("loud_agent:Loud")
    assert isinstance(agent, ChildAgent)
    assert (agent.name, agent.description, agent.needs_mcp) == ("loud", "imported where?", True)
    assert "loud_agent" not in sys.modules
    with pytest.raises(ValueError, match="^agent 'loud_agent:Nope': module 'loud_agent' has no "
                       "attribute 'Nope'$"):
        resolve_agent("loud_agent:Nope")


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found
