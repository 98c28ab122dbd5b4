"""One marathon per (app, agent) and test session, shared by the xdist workers.

The attacker tests read the same runs from many tests: a file lock lets one worker record a
marathon while the other waits, then re-scores the sealed bundle, so no marathon is made twice.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from pytest_marathon.config import RunConfig
from pytest_marathon.results import MarathonResult
from pytest_marathon.runner import run_marathon, score_run

from . import attackers


def shared_runs(tmp_path_factory: pytest.TempPathFactory, app: str, seed: int,
                scenario: str) -> Callable[[str], MarathonResult]:
    """`get(name)`: the runbook's (name "runbook") or an attacker's marathon of `app`, made on
    first use and kept; the bundles and the noop baseline live in the session's temporary
    directory (the one all xdist workers share)."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "adversaries" / app
    out, cache = shared / "bundles", shared / "noop-cache"
    out.mkdir(parents=True, exist_ok=True)
    factories = attackers(scenario)
    done: dict[str, MarathonResult] = {}

    def get(name: str) -> MarathonResult:
        if name in done:
            return done[name]
        agent = None if name == "runbook" else factories[name]()
        spec = name if agent is None else f"adversary:{name}"
        config = RunConfig(app=app, agent=spec, seed=seed, scenario=scenario, out_dir=out)
        sealed = out / f"{config.run_id}.done"
        with FileLock(str(out / f"{config.run_id}.lock")):
            if sealed.exists():
                done[name] = score_run(config, config.bundle_dir, baseline_cache=cache)
            else:
                done[name] = run_marathon(config, agent=agent, baseline_cache=cache)
                sealed.touch()
        return done[name]

    return get


def stream(bundle: Path, name: str) -> list[dict[str, Any]]:
    """The records of one stream of a bundle, in file order."""
    path = bundle / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def assert_ran_its_recipe(bundle: Path, name: str) -> None:
    """Guards the attacker tests against passing vacuously: every invocation ended normally and
    the attacker reported incidents (and acted, if that is its recipe)."""
    invocations = stream(bundle, "invocations")
    assert invocations and {i["status"] for i in invocations} == {"ok"}, [i["detail"] for i in invocations]
    assert stream(bundle, "reports"), f"{name} reported nothing"
    acts = [c for c in stream(bundle, "tool_calls") if c["kind"] == "act"]
    if name.startswith(("noop", "risk", "catch", "combined")):
        assert acts, f"{name} issued no action"
