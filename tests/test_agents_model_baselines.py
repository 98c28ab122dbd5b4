"""The paper's model-based baselines (ReAct, RAG, Keep-agent) in whole short marathons, with the
scripted model double on loopback as their OpenAI-compatible upstream behind the run's metering
proxy.

The double answers each agent's real requests (`model_double/react_script.py`: tool calls;
`model_double/plan_script.py`: one JSON plan) and demands the user's key, which only the proxy
holds; its recorded usage is what the proxy must have metered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from model_double import ModelDouble
from model_double.plan_script import PlanScript
from model_double.react_script import ReactScript

from pytest_marathon.cli import main
from pytest_marathon.config import RunConfig
from pytest_marathon.runner import MarathonResult, run_marathon

REAL_KEY = "sk-user-key-held-by-the-proxy"
MODEL = "gpt-5-mini"
PRICE = (0.25, 2.00)  # USD per million input / output tokens for MODEL in the built-in table
SEED = 2
SCENARIO = "short-5"
TINY = str(Path(__file__).parent / "scenarios" / "tiny-2.yaml")
AGENTS = ("react", "rag", "keep-agent")


def script_for(agent: str) -> Any:
    return ReactScript() if agent == "react" else PlanScript()


@contextmanager
def user_model(script: Any, base_url: str | None = None) -> Iterator[ModelDouble]:
    """The user's environment: the double as OpenAI upstream (or `base_url`), the user's key and
    model beside it."""
    with ModelDouble(script=script, require_key=REAL_KEY) as double, pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_BASE_URL", base_url or double.openai_base_url)
        mp.setenv("OPENAI_API_KEY", REAL_KEY)
        mp.setenv("MARATHON_MODEL", MODEL)
        yield double


def run(agent: str, out: Path, scenario: str = SCENARIO, **overrides: Any) -> MarathonResult:
    config = RunConfig(app="boutique", agent=agent, seed=SEED, scenario=scenario, out_dir=out, **overrides)
    return run_marathon(config, baseline_cache=None, score=False)


def stream(bundle: Path, name: str) -> list[dict[str, Any]]:
    text = (bundle / f"{name}.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def manifest(bundle: Path) -> dict[str, Any]:
    return json.loads((bundle / "manifest.json").read_text())


def check_usage_is_what_the_proxy_metered(bundle: Path, double: ModelDouble) -> None:
    """Each invocation's record holds exactly the usage the double reported for the calls made
    during it (calls are consumed in order), priced at the built-in table's rate."""
    exchanges = double.model_exchanges("chat")
    assert exchanges and all(e.status == 200 for e in exchanges)
    assert {e.headers.get("authorization") for e in exchanges} == {f"Bearer {REAL_KEY}"}
    assert {e.body["model"] for e in exchanges} == {MODEL}
    position = 0
    for record in stream(bundle, "invocations"):
        assert record["usage_source"] == "proxy"
        calls = exchanges[position : position + record["model_calls"]]
        position += record["model_calls"]
        assert record["input_tokens"] == sum(e.usage[0] for e in calls)
        assert record["output_tokens"] == sum(e.usage[1] for e in calls)
        cost = sum(e.usage[0] * PRICE[0] + e.usage[1] * PRICE[1] for e in calls) / 1e6
        assert record["cost_usd"] == pytest.approx(cost, abs=1e-6)
    assert position == len(exchanges)


@pytest.mark.parametrize("agent", AGENTS)
def test_each_baseline_completes_short5_reports_repairs_and_is_metered_by_the_proxy(
    agent: str, tmp_path: Path
) -> None:
    with user_model(script_for(agent)) as double:
        result = run(agent, tmp_path)
    assert manifest(result.bundle)["complete"] is True
    invocations = stream(result.bundle, "invocations")
    assert [r["status"] for r in invocations] == ["ok"] * len(invocations)
    reports = stream(result.bundle, "reports")
    assert reports, "no incident was reported"
    assert any((r.get("root_cause") or {}).get("culprits") for r in reports)
    acts = [c for c in stream(result.bundle, "tool_calls") if c["kind"] == "act"]
    assert [c for c in acts if c["verdict"] == "ok"], f"no repair ran: {acts}"
    assert stream(result.bundle, "interventions"), "no intervention was recorded"
    check_usage_is_what_the_proxy_metered(result.bundle, double)


@pytest.mark.parametrize("agent", AGENTS)
def test_two_runs_with_the_same_answers_ask_the_same_and_have_the_same_content_digest(
    agent: str, tmp_path: Path
) -> None:
    bundles, bodies = [], []
    for attempt in ("first", "second"):
        with user_model(script_for(agent)) as double:
            bundles.append(run(agent, tmp_path / attempt, scenario=TINY).bundle)
        bodies.append([e.body for e in double.model_exchanges()])
    assert bodies[0] and bodies[0] == bodies[1]
    digests = {manifest(bundle)["content_digest"] for bundle in bundles}
    assert len(digests) == 1


@pytest.mark.parametrize("agent", AGENTS)
def test_a_spent_budget_leaves_every_invocation_recorded_and_the_run_going(agent: str, tmp_path: Path) -> None:
    with user_model(script_for(agent)) as double:
        result = run(agent, tmp_path, scenario=TINY, max_cost_usd=0.0)
    invocations = stream(result.bundle, "invocations")
    assert manifest(result.bundle)["complete"] is True
    assert len(invocations) == 6
    assert double.model_exchanges() == [], "the proxy let a call through a spent budget"
    asked = [r for r in invocations if r["refused_calls"]]
    assert asked, "no invocation asked the model"
    for record in asked:
        assert record["status"] == "ok"
        assert (record["model_calls"], record["cost_usd"]) == (0, 0.0)
        assert "model unavailable" in record["detail"] and "429" in record["detail"]
    if agent == "react":  # its pre-filed incident holds every alert although the model never ran
        filed = {a for r in stream(result.bundle, "reports") for a in r.get("alert_ids") or []}
        assert filed == {a["alert_id"] for a in stream(result.bundle, "alerts")}


def test_an_unreachable_model_is_an_error_invocation_and_the_run_goes_on(tmp_path: Path) -> None:
    """A proxy whose upstream refuses connections: each invocation that asked is recorded as an
    error naming the failure; ReAct still published its pre-filed incident."""
    with user_model(ReactScript(), base_url="http://127.0.0.1:9/v1"):
        result = run("react", tmp_path, scenario=TINY)
    invocations = stream(result.bundle, "invocations")
    assert manifest(result.bundle)["complete"] is True
    asked = [r for r in invocations if r["status"] != "ok"]
    assert asked and {r["status"] for r in asked} == {"error"}
    assert all("model unavailable" in r["detail"] and "502" in r["detail"] for r in asked)
    assert stream(result.bundle, "reports"), "the pre-filed incident was not published"


def test_a_plan_cannot_run_a_read_the_report_tool_or_an_unknown_tool(tmp_path: Path) -> None:
    """The attacker check: a plan whose repairs name tools that are not act tools has those
    repairs refused (none is called) and recorded; the rest of the plan is published."""
    with user_model(PlanScript(hostile=True)):
        result = run("rag", tmp_path, scenario=TINY)
    calls = stream(result.bundle, "tool_calls")
    assert not [c for c in calls if c["tool"] == "get_logs" and "contains" in c["args"]]
    assert not [c for c in calls if c["tool"] == "delete_namespace"]
    assert not [c for c in calls if c["tool"] == "report_incidents" and c["args"]["incidents"] == []]
    assert not [c for c in calls if c["kind"] == "act"], "a hostile plan's repair ran"
    details = " ".join(r["detail"] for r in stream(result.bundle, "invocations"))
    for tool in ("get_logs", "report_incidents", "delete_namespace"):
        assert f"repair tool '{tool}' is not an act tool; refused" in details
    assert stream(result.bundle, "reports"), "the plan's incidents were not published"


def test_an_answer_that_is_no_plan_is_a_recorded_no_op(tmp_path: Path) -> None:
    with user_model(PlanScript(garbage=True)):
        result = run("rag", tmp_path, scenario=TINY)
    invocations = stream(result.bundle, "invocations")
    asked = [r for r in invocations if r["model_calls"]]
    assert asked and all(r["status"] == "ok" for r in invocations)
    assert all(r["detail"].startswith("plan rejected, nothing run: the plan is not JSON") for r in asked)
    assert stream(result.bundle, "reports") == []
    assert [c for c in stream(result.bundle, "tool_calls") if c["kind"] != "read"] == []


def test_keep_agent_discards_a_move_of_an_alert_keep_placed(tmp_path: Path) -> None:
    """The script claims the first alert of Keep's first incident for its own incident; the
    alert stays in Keep's incident and the discarded move is named in the record."""
    with user_model(PlanScript(steal=True)):
        result = run("keep-agent", tmp_path, scenario=TINY)
    reports = stream(result.bundle, "reports")
    keep_first = next(r for r in reports if r["incident_id"] == "keep-0001" and r.get("alert_ids"))
    stolen = keep_first["alert_ids"][0]
    holders = {r["incident_id"] for r in reports if stolen in (r.get("alert_ids") or [])}
    assert holders == {"keep-0001"}
    details = " ".join(r["detail"] for r in stream(result.bundle, "invocations"))
    assert f"move of alert {stolen} (Keep placed it in keep-0001) to plan-unassigned discarded" in details


def test_react_stops_after_ten_steps(tmp_path: Path) -> None:
    with user_model(ReactScript(endless=True)) as double:
        result = run("react", tmp_path, scenario=TINY)
    asked = [r for r in stream(result.bundle, "invocations") if r["model_calls"]]
    assert asked and {r["model_calls"] for r in asked} == {10}
    assert all("stopped after 10 steps" in r["detail"] for r in asked)
    assert len(double.model_exchanges()) == 10 * len(asked)


def test_the_agents_command_lists_the_model_baselines_with_what_they_need(capsys) -> None:
    assert main(["agents"]) == 0
    out = capsys.readouterr().out
    for agent in AGENTS:
        line = next(line for line in out.splitlines() if line.split()[:1] == [agent])
        assert "MARATHON_MODEL" in line and "OPENAI_API_KEY" in line


def test_tool_arguments_that_are_no_object_are_called_empty_and_the_model_is_told(tmp_path: Path) -> None:
    script = ReactScript(malformed=True)
    with user_model(script):
        result = run("react", tmp_path, scenario=TINY)
    assert script.answers_to_malformed
    for answer in script.answers_to_malformed:
        note, _, body = answer.partition("\n")
        assert note == "arguments were not a JSON object; called with no arguments"
        assert "error" not in json.loads(body)  # get_topology needs no arguments
    calls = stream(result.bundle, "tool_calls")
    assert [c["args"] for c in calls if c["tool"] == "get_topology"][0] == {}
    assert all(r["status"] == "ok" for r in stream(result.bundle, "invocations"))


def test_the_cli_model_option_chooses_the_model_for_the_run_and_records_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with user_model(PlanScript()) as double:
        code = main(["run", "--app", "boutique", "--agent", "rag", "--seed", str(SEED),
                     "--scenario", TINY, "--out", str(tmp_path / "b"), "--model", "gpt-4.1-mini",
                     "--baseline-cache", str(tmp_path / "cache"), "--alerts", "0"])
        assert os.environ["MARATHON_MODEL"] == MODEL, "the run's choice outlived the run"
    assert code == 0, capsys.readouterr().err
    assert double.model_exchanges()
    assert {e.body["model"] for e in double.model_exchanges()} == {"gpt-4.1-mini"}
    (bundle,) = [p.parent for p in (tmp_path / "b").glob("*/manifest.json")]
    assert manifest(bundle)["config"]["model"] == "gpt-4.1-mini"


def test_the_pytest_model_option_chooses_the_model_of_every_run(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.path.joinpath("tiny-2.yaml").write_text(Path(TINY).read_text())
    with user_model(PlanScript()) as double:
        result = pytester.runpytest_subprocess(
            "--marathon-app=boutique", "--agent=rag", "--marathon-scenario=tiny-2.yaml",
            "--marathon-model=gpt-4.1-nano", f"--marathon-bundle-dir={tmp_path}",
            "-p", "no:cacheprovider",
        )
    result.assert_outcomes(passed=1)
    assert double.model_exchanges()
    assert {e.body["model"] for e in double.model_exchanges()} == {"gpt-4.1-nano"}
    (found,) = [json.loads(p.read_text()) for p in tmp_path.glob("*/manifest.json")]
    assert found["config"]["model"] == "gpt-4.1-nano"


def test_no_model_call_starts_too_near_the_invocation_deadline(tmp_path: Path) -> None:
    """With a 2.5 s budget no call fits (2 s are kept to publish): the model is never asked, and
    running out of time is a degradation, not an error."""
    with user_model(PlanScript()) as double:
        result = run("rag", tmp_path, scenario=TINY, budget_s=2.5)
    invocations = stream(result.bundle, "invocations")
    assert double.model_exchanges() == []
    assert all(r["status"] == "ok" for r in invocations)
    asked = [r for r in invocations if "no time left" in r["detail"]]
    assert asked and all(r["model_calls"] == 0 for r in asked)


@pytest.mark.parametrize("agent", [*AGENTS, "orbit"])
def test_without_the_client_library_the_agent_is_refused_before_the_run(agent: str, tmp_path: Path) -> None:
    """As a user who installed without the `llm` extra: `openai` cannot be imported (None in
    sys.modules), so the CLI stops at once with one line naming the extra and writes nothing."""
    out = tmp_path / "out"
    script = (
        "import sys; sys.modules['openai'] = None\n"
        "from pytest_marathon.cli import main\n"
        f"sys.exit(main(['run', '--app', 'boutique', '--agent', {agent!r}, '--seed', '1',"
        f" '--scenario', 'short-5', '--out', {str(out)!r}]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and agent in lines[0] and "pytest-marathon[llm]" in lines[0], done.stderr
    assert not out.exists()
