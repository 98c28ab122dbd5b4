"""The shipped recorded runs of the model-based baselines replay bit for bit with no model.

`recordings/model-baselines/` holds one short-5 marathon per baseline, recorded against the
scripted model of the tests (`tests/record_model_baselines.py` makes them). Replayed here with no
upstream (its address refuses connections), no key and no network, each run must send exactly the
recorded requests and seal a bundle with the recorded content digest, its tokens and dollars
metered from the replayed answers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from record_model_baselines import EXPECTED, RECORDINGS, SCRIPTS, config_for

from pytest_marathon.bundle import read_bundle
from pytest_marathon.runner import run_marathon

RERECORD = "the recordings are stale: make them again with `python tests/record_model_baselines.py`"


def _expected() -> dict[str, dict[str, str]]:
    return json.loads((RECORDINGS / EXPECTED).read_text())


def test_every_model_baseline_has_a_recorded_run() -> None:
    assert sorted(row["agent"] for row in _expected().values()) == sorted(SCRIPTS)
    for run_id in _expected():
        assert (RECORDINGS / f"{run_id}.jsonl").is_file()


@pytest.mark.parametrize("agent", sorted(SCRIPTS))
def test_a_recorded_run_replays_to_the_recorded_content_digest(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = config_for(agent, tmp_path, replay_model=RECORDINGS)
    result = run_marathon(config, baseline_cache=None, score=False)

    assert result.replay_mismatch is None, f"{result.replay_mismatch}; {RERECORD}"
    bundle = read_bundle(result.bundle)
    assert bundle.manifest["content_digest"] == _expected()[config.run_id]["content_digest"], RERECORD
    invocations = bundle.stream("invocations")
    assert sum(r["model_calls"] for r in invocations) > 0
    assert all(r["usage_source"] == "proxy" for r in invocations)
    assert sum(r["cost_usd"] for r in invocations) > 0
