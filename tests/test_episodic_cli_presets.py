"""Episodes played by the real Codex and Claude Code CLIs (npm) over the episode's MCP server,
their model being the scripted double on loopback (`model_double.episode_script`: list the pods
with `exec_shell`, submit "Yes" when one is troubled). The marathon's presets run unchanged: the
task arrives as their instructions file, the tools as MCP tools, the model calls through the
episode's metering proxy."""

from __future__ import annotations

import pytest
from episode_scripts import needs_kubectl
from model_double import ModelDouble
from model_double.episode_script import EpisodeScript
from test_agents_cli_presets import CLIS, model_env, needs

from pytest_marathon.episodic import run_problem
from pytest_marathon.episodic.problems import find_problem

HOTEL = ("hotelreservation",)


@needs_kubectl
@pytest.mark.parametrize("preset", [pytest.param(p, marks=needs(p)) for p in CLIS])
@pytest.mark.parametrize(("pid", "answer"), [
    ("noop_detection_hotel_reservation-1", "No"),
    ("revoke_auth_mongodb-detection-1", "Yes"),  # geo crash-loops: its pod is not Running or has restarted
])
def test_a_cli_preset_solves_a_detection_problem_over_mcp(preset, pid, answer, tmp_path, monkeypatch) -> None:
    script = EpisodeScript()
    with ModelDouble(script) as double:
        for name, value in model_env(double, tmp_path / "home").items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("CODEX_HOME", raising=False)
        monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
        result = run_problem(find_problem(pid, HOTEL), preset, seed=3, max_steps=5, out_dir=tmp_path / "out")
    score = result.to_json()
    assert result.correct, (score, script.observations)
    assert score["solution"] == answer
    assert score["steps"] == 2  # exec_shell, submit: the CLI's own turns are not steps
    assert score["input_tokens"] > 0  # metered through the episode's proxy
    assert any("NAME" in o and "READY" in o for o in script.observations)  # the listing reached the model
