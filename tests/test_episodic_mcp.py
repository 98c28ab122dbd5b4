"""Episodes played by the marathon's program agents over MCP, and the episodic report.

The agent is a `cmd:` program (tests/agent_programs/episode_over_mcp.py) that speaks MCP with the
mcp client over the real streamable-HTTP transport, run in the marathon's sandbox; what it
expects of the server it checks itself and exits 3 otherwise, which the bundle records.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_marathon.bundle import read_bundle
from pytest_marathon.episodic import run_problem
from pytest_marathon.episodic.problems import find_problem
from pytest_marathon.episodic.recording import score_episode
from pytest_marathon.episodic.session import agent_folder

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None,
                                reason="kubectl not installed (Debian package 'kubernetes-client')")

PROGRAM = Path(__file__).parent / "agent_programs" / "episode_over_mcp.py"
FAULT = "astronomy_shop_ad_service_failure-detection-1"
NOOP = "noop_detection_astronomy_shop-1"


def spec(plan: str) -> str:
    return f'cmd:"{sys.executable}" "{PROGRAM}" {plan}'


def test_a_cmd_agent_solves_problems_over_mcp_with_the_acis_guard_rails(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--marathon-mode=episodic", f"--agent={spec('detect')}", f"--marathon-problem={FAULT}",
        f"--marathon-problem={NOOP}", "--marathon-json=episodes.json", "--marathon-report=report/episodes.html",
        "--marathon-min-accuracy=detection:100", "-q")
    result.assert_outcomes(passed=2)
    folder = pytester.path / ".marathon" / "episodes" / agent_folder(spec("detect"))
    bundle = read_bundle(folder / FAULT)
    calls = bundle.stream("tool_calls")
    assert [c["tool"] for c in calls] == ["exec_shell", "exec_shell", "get_logs"]
    assert calls[0]["observation"] == "Error: Cannot use `kubectl edit`. Use `kubectl patch` instead."
    assert calls[0]["verdict"] == "error" and calls[1]["verdict"] == "ok"
    # one step per tool call, STEP_S of virtual time apart; submit is the fourth; the call after
    # it was refused (the program checked) and is not recorded
    assert [c["t"] for c in calls] == [120.0, 130.0, 140.0]
    assert bundle.stream("reports") == [{"t": 150.0, "seq": 4, "solution": "Yes"}]
    invocations = bundle.stream("invocations")
    assert [i.get("kind") for i in invocations] == [None, None, None, None, "process"]
    assert invocations[-1]["status"] == "ok", invocations[-1]["detail"]
    score = json.loads((folder / f"{FAULT}.score.json").read_text())
    assert score == score_episode(folder / FAULT)
    assert (score["correct"], score["steps"], score["tool_calls"], score["ttx_s"], score["process"]) == \
        (True, 4, 3, 30.0, "ok")
    assert bundle.manifest["isolation"] in ("sandbox", "process")
    written = json.loads((pytester.path / "episodes.json").read_text())
    assert written["accuracy"] == {spec("detect"): {"detection": {"problems": 2, "correct": 2, "accuracy": 100.0}}}
    html = (pytester.path / "report" / "episodes.html").read_text()
    assert "<h2>Accuracy per task</h2>" in html and "<td>100.0</td>" in html
    link = f"../.marathon/episodes/{agent_folder(spec('detect'))}/{FAULT}"
    assert f'<a href="{link}">bundle</a>' in html
    assert (pytester.path / "report" / link / "manifest.json").exists()


def test_the_step_limit_counts_tool_calls_and_ends_the_episode(tmp_path: Path) -> None:
    problem = find_problem(NOOP, ("astronomy",))
    result = run_problem(problem, spec("loop"), max_steps=3, out_dir=tmp_path)
    assert not result.submitted and not result.correct and result.ttx_s is None
    assert result.steps == 3
    bundle = read_bundle(tmp_path / problem.pid)
    assert len(bundle.stream("tool_calls")) == 3
    process = bundle.stream("invocations")[-1]
    assert process["kind"] == "process" and process["status"] == "ok", process["detail"]


def test_a_program_that_fails_its_expectations_is_recorded_as_a_crash(tmp_path: Path) -> None:
    problem = find_problem(NOOP, ("astronomy",))
    result = run_problem(problem, spec("unknown-plan"), max_steps=2, out_dir=tmp_path)
    assert result.steps == 0 and not result.submitted
    assert score_episode(tmp_path / problem.pid)["process"] == "crash"


def test_the_leaderboard_merges_result_files_per_agent_and_task(tmp_path: Path) -> None:
    def results(agent: str, correct: list[bool]) -> Path:
        episodes = [{"agent": agent, "pid": f"p{i}-detection-1", "task": "detection", "correct": c, "steps": 2,
                     "ttx_s": 10.0 * (i + 1), "input_tokens": 100, "output_tokens": 10, "cost_usd": 0.01,
                     "bundle": str(tmp_path / agent / f"p{i}")} for i, c in enumerate(correct)]
        path = tmp_path / f"{agent}.json"
        path.write_text(json.dumps({"mode": "episodic", "accuracy": {}, "episodes": episodes}))
        return path

    files = [results("a", [True, False]), results("b", [True, True])]
    run = subprocess.run([sys.executable, "-m", "pytest_marathon", "episode", "--leaderboard", *map(str, files),
                          "--report", str(tmp_path / "board.html")],
                         capture_output=True, text=True, timeout=60, check=True)
    rows = [line.split() for line in run.stdout.splitlines()[2:4]]
    assert rows == [["b", "detection", "2", "2", "100.0", "2.0", "15.0", "220", "0.0200"],
                    ["a", "detection", "2", "1", "50.0", "2.0", "15.0", "220", "0.0200"]]
    html = (tmp_path / "board.html").read_text()
    assert html.count('<a href="a/p') == 2 and "<td>p1-detection-1</td>" in html
    refused = subprocess.run([sys.executable, "-m", "pytest_marathon", "episode", "--leaderboard", str(tmp_path / "x.json")],
                             capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 2 and "--leaderboard" in refused.stderr
