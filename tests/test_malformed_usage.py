"""Issue 14 item 2: whatever an agent returns or raises, its run is recorded, sealed and scored,
and each invocation names the agent and the field in one line (corpus: malformed_agents.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from malformed_agents import CORPUS

from pytest_marathon.cli import main
from pytest_marathon.config import RunConfig
from pytest_marathon.runner import run_marathon

#: A one-fault, six-minute scenario: enough for three invocations and a score, in about a second.
TINY = """\
name: tiny
description: one fault, three invocations
warmup_s: 60
injection_window_s: 240
observation_s: 120
arrivals: 1
intensity: {start: 1.0, end: 1.0}
lifetime_s: {min: 120, max: 180}
max_concurrent: 1
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("malformed")
    scenario = root / "tiny.yaml"
    scenario.write_text(TINY)
    return {"scenario": scenario, "cache": root / "noop-cache", "out": root / "bundles"}


def _strict_json(line: str) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"non-JSON constant {constant} in the bundle")

    return json.loads(line, parse_constant=refuse)


@pytest.mark.parametrize("agent_class", list(CORPUS), ids=[c.__name__ for c in CORPUS])
def test_a_malformed_agent_gives_a_sealed_scored_run_naming_agent_and_field(
    world: dict[str, Path], agent_class: type, capsys: pytest.CaptureFixture[str]
) -> None:
    status, fragments = CORPUS[agent_class]
    spec = f"malformed_agents:{agent_class.__name__}"
    config = RunConfig(app="boutique", agent=spec, seed=1, scenario=str(world["scenario"]),
                       out_dir=world["out"])
    result = run_marathon(config, agent=agent_class(), baseline_cache=world["cache"])

    manifest = _strict_json((result.bundle / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["sealed"]
    for stream in result.bundle.glob("*.jsonl"):
        for line in stream.read_text().splitlines():
            _strict_json(line)
    invocations = [_strict_json(line)
                   for line in (result.bundle / "invocations.jsonl").read_text().splitlines()]
    assert len(invocations) == 3
    for record in invocations:
        assert record["status"] == status
        detail = record["detail"]
        assert "\n" not in detail and detail.startswith(f"agent {spec!r} ")
        for fragment in fragments:
            assert fragment in detail, detail
        for field in ("model_calls", "input_tokens", "output_tokens"):
            assert type(record[field]) is int and 0 <= record[field] <= 10**12
        assert 0.0 <= record["cost_usd"] <= 1e6
    assert result.invocations == {status: 3}
    assert sum(1 for line in (result.bundle / "tool_calls.jsonl").read_text().splitlines()) == 3

    assert main(["score", str(result.bundle), "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["faults"] == 1
    assert scored["diagnostics"]["invocation_outcomes"] == {status: 3}
    assert scored["marathon_score"] == result.metrics["score"]


def test_valid_usage_is_kept_as_given(world: dict[str, Path]) -> None:
    """The validation refuses only what is wrong: whole floats, zero and real numbers pass."""
    from pytest_marathon.agents import InvocationUsage

    class Honest:
        name = "honest"
        description = "reports plausible usage"

        def invoke(self, ctx: Any) -> Any:
            return InvocationUsage(model_calls=2, input_tokens=1200, output_tokens=300.0,
                                   cost_usd=0.0123, status="ok", detail="fine")

    config = RunConfig(app="boutique", agent="honest", seed=1, scenario=str(world["scenario"]),
                       out_dir=world["out"])
    result = run_marathon(config, agent=Honest(), baseline_cache=world["cache"])
    records = [json.loads(line)
               for line in (result.bundle / "invocations.jsonl").read_text().splitlines()]
    # The metering proxy measures what a run spends; what the agent claims is kept beside it.
    assert {r["usage_source"] for r in records} == {"proxy"}
    claimed = [r["self_reported"] for r in records]
    assert {(r["status"], r["detail"]) for r in records} == {("ok", "fine")}
    assert {tuple(sorted(c.items())) for c in claimed} == {
        (("cost_usd", 0.0123), ("input_tokens", 1200), ("model_calls", 2), ("output_tokens", 300))
    }
    assert type(claimed[0]["output_tokens"]) is int
