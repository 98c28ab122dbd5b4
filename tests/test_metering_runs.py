"""Metering in whole runs: the runner starts the proxy, agents reach models only through it, and
what lands in `invocations.jsonl` is what the proxy measured, timeouts and budget included.

The upstream is the scripted model double; it answers 401 unless it receives the user's key, and
the `cmd:` program records the environment it was given.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from model_double import ModelDouble, Text
from pytest_marathon.agents import InvocationContext

from pytest_marathon.cli import main
from pytest_marathon.config import RunConfig
from pytest_marathon.isolation.probe import sandbox_support
from pytest_marathon.metering import PLACEHOLDER_KEY, load_price_table
from pytest_marathon.runner import run_marathon

PROGRAM = Path(__file__).parent / "agent_programs" / "openai_caller.py"
REAL_KEY = "sk-real-user-key-never-for-agents"
GPT5_MINI = (0.25, 2.00)  # USD per million input / output tokens, built-in table

pytest_plugins = ["pytester"]


def _scenario(path: Path, invocations: int) -> Path:
    """A fault-free scenario of `invocations` invocations at the default Δ (seconds to run)."""
    path.write_text(
        "name: metered\ndescription: no faults\nwarmup_s: 60\n"
        f"injection_window_s: {120 * invocations}\nobservation_s: 0\narrivals: 0\n"
        "intensity: {start: 1.0, end: 1.0}\nlifetime_s: {min: 240, max: 720}\nmax_concurrent: 1\n"
    )
    return path


@pytest.fixture
def double(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ModelDouble]:
    """The user's environment: the double as OpenAI upstream, the user's key beside it.

    The programs run without the sandbox, which would keep them from reporting to the test
    through a file outside their workspace (a sandboxed metered run is in
    tests/test_isolation_cmd.py)."""
    monkeypatch.setenv("MARATHON_SANDBOX", "off")
    sandbox_support.cache_clear()
    with ModelDouble(script=lambda conv: Text("Nothing to do."), require_key=REAL_KEY) as running:
        monkeypatch.setenv("OPENAI_BASE_URL", running.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", REAL_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", running.anthropic_base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", REAL_KEY)
        monkeypatch.setenv("METER_AGENT_REPORT", str(tmp_path / "agent-report.jsonl"))
        with pytest.warns(UserWarning, match="without a sandbox"):
            sandbox_support()
        yield running
    monkeypatch.delenv("MARATHON_SANDBOX")
    sandbox_support.cache_clear()


def _records(bundle: Path, stream: str = "invocations") -> list[dict[str, Any]]:
    return [json.loads(line) for line in (bundle / f"{stream}.jsonl").read_text().splitlines()]


def _agent_reports(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "agent-report.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _cmd(tmp_path: Path, invocations: int, **overrides: Any) -> RunConfig:
    return RunConfig(
        app="boutique",
        agent=f'cmd:"{sys.executable}" "{PROGRAM}"',
        seed=1,
        scenario=str(_scenario(tmp_path / "metered.yaml", invocations)),
        out_dir=tmp_path / "bundles",
        **overrides,
    )


def _cost(usages: list[tuple[int, int]]) -> float:
    return sum(i * GPT5_MINI[0] + o * GPT5_MINI[1] for i, o in usages) / 1_000_000


def test_a_cmd_agents_tokens_and_dollars_come_from_the_proxy_and_it_never_holds_the_key(
    double: ModelDouble, tmp_path: Path
) -> None:
    result = run_marathon(_cmd(tmp_path, 2), baseline_cache=None)
    records = _records(result.bundle)
    usages = [e.usage for e in double.model_exchanges()]
    assert [e.api for e in double.model_exchanges()] == ["responses", "chat"] * 2
    assert [r["status"] for r in records] == ["ok", "ok"]
    for record, calls in zip(records, (usages[:2], usages[2:])):
        assert record["usage_source"] == "proxy"
        assert record["model_calls"] == 2
        assert record["input_tokens"] == sum(u[0] for u in calls)
        assert record["output_tokens"] == sum(u[1] for u in calls)
        assert record["cost_usd"] == pytest.approx(_cost(calls), abs=1e-6)
        assert (record["refused_calls"], record["unpriced_models"]) == (0, [])
    cost = result.score_report["cost"]
    assert cost["model_calls"] == 4 and cost["input_tokens"] == sum(u[0] for u in usages)
    # the upstream saw the user's key on every call; the agent saw only the placeholder
    assert {e.headers.get("Authorization") or e.headers.get("authorization")
            for e in double.exchanges} == {f"Bearer {REAL_KEY}"}
    reports = _agent_reports(tmp_path)
    assert [r["calls"] for r in reports] == [[{"ok": "Nothing to do."}] * 2] * 2
    for report in reports:
        env = report["env"]
        assert env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"] == PLACEHOLDER_KEY
        assert env["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")
        assert env["OPENAI_BASE_URL"].endswith("/openai/v1")
        assert env["OPENAI_BASE_URL"] != double.openai_base_url
        assert not [name for name, value in env.items() if REAL_KEY in value]
    manifest = json.loads((result.bundle / "manifest.json").read_text())
    assert manifest["config"]["max_cost_usd"] == 8.0
    assert manifest["config"]["price_table_digest"] == load_price_table().digest


def test_calls_made_before_a_timeout_are_recorded(
    double: ModelDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METER_AGENT_MODE", "hang")
    result = run_marathon(_cmd(tmp_path, 1, budget_s=6.0), baseline_cache=None, score=False)
    (record,) = _records(result.bundle)
    assert _agent_reports(tmp_path), "the program made its calls before it was killed"
    assert record["status"] == "timeout"
    assert record["model_calls"] == 2
    assert record["input_tokens"] == sum(e.usage[0] for e in double.model_exchanges()) > 0
    assert record["cost_usd"] > 0


def test_a_run_past_its_budget_gets_refusals_and_records_them(
    double: ModelDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_marathon(_cmd(tmp_path, 2, max_cost_usd=1e-6), baseline_cache=None, score=False)
    first, second = _records(result.bundle)
    assert (first["model_calls"], first["refused_calls"]) == (1, 1)
    assert (second["model_calls"], second["refused_calls"]) == (0, 1)
    assert len(double.model_exchanges()) == 1
    refusal = {"status": 429, "code": "insufficient_quota"}
    assert [r["calls"] for r in _agent_reports(tmp_path)] == [
        [{"ok": "Nothing to do."}, refusal],
        [refusal],
    ]
    manifest = json.loads((result.bundle / "manifest.json").read_text())
    assert manifest["config"]["max_cost_usd"] == 1e-6
    assert main(["score", str(result.bundle)]) == 0
    assert "; 2 calls refused at the budget" in capsys.readouterr().out


class ModelPlugin:
    """An in-process plug-in that reaches its model through `ctx.model_base_urls` and claims a
    usage of its own."""

    name = "model-plugin"
    description = "calls a model through the run's proxy"

    def __init__(self) -> None:
        self.base_urls: list[dict[str, str]] = []

    def invoke(self, ctx: InvocationContext) -> dict[str, Any]:
        self.base_urls.append(dict(ctx.model_base_urls))
        client = openai.OpenAI(base_url=ctx.model_base_urls["openai"], api_key="anything")
        client.responses.create(model="gpt-5-mini", input="status?")
        return {"model_calls": 1, "input_tokens": 1, "output_tokens": 1, "cost_usd": 0.0}


def test_a_plugin_reaches_its_model_through_the_context_and_its_claim_is_kept_aside(
    double: ModelDouble, tmp_path: Path
) -> None:
    plugin = ModelPlugin()
    config = RunConfig(app="boutique", agent="tests:ModelPlugin", seed=1,
                       scenario=str(_scenario(tmp_path / "s.yaml", 1)), out_dir=tmp_path)
    result = run_marathon(config, agent=plugin, baseline_cache=None, score=False)
    (record,) = _records(result.bundle)
    (usage,) = [e.usage for e in double.model_exchanges()]
    assert (record["input_tokens"], record["output_tokens"]) == usage
    assert record["self_reported"] == {"model_calls": 1, "input_tokens": 1, "output_tokens": 1}
    assert set(plugin.base_urls[0]) == {"openai", "anthropic"}


class ModelFree:
    name = "model-free"
    description = "declares that it calls no model"
    uses_models = False

    def __init__(self) -> None:
        self.base_urls: list[dict[str, str]] = []

    def invoke(self, ctx: InvocationContext) -> None:
        self.base_urls.append(dict(ctx.model_base_urls))


def test_an_agent_that_uses_no_model_runs_without_a_proxy(tmp_path: Path) -> None:
    agent = ModelFree()
    config = RunConfig(app="boutique", agent="tests:ModelFree", seed=1,
                       scenario=str(_scenario(tmp_path / "s.yaml", 1)), out_dir=tmp_path)
    result = run_marathon(config, agent=agent, baseline_cache=None, score=False)
    assert agent.base_urls == [{}]
    (record,) = _records(result.bundle)
    assert record["usage_source"] == "agent" and record["model_calls"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-cost", "cheap"], "--max-cost: 'cheap' is not a dollar amount"),
        (["--price-table", "missing.yaml"], "--price-table: price table missing.yaml: cannot read"),
    ],
)
def test_cli_refuses_a_bad_budget_or_price_table_before_running(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(["run", "--app", "boutique", "--agent", "noop", "--seed", "1",
                 "--out", str(tmp_path), *args])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_the_pytest_options_set_the_budget_and_price_table_of_every_run(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    _scenario(pytester.path / "metered.yaml", 1)
    pytester.path.joinpath("prices.yaml").write_text("models:\n  gpt-5-mini: {input: 1, output: 2}\n")
    bad = pytester.runpytest_subprocess(
        "--marathon-app=boutique", "--agent=noop", "--marathon-max-cost=lots"
    )
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--marathon-max-cost: 'lots' is not a dollar amount" in bad.stderr.str()
    result = pytester.runpytest_subprocess(
        "--marathon-app=boutique", "--agent=noop", "--marathon-scenario=metered.yaml",
        "--marathon-max-cost=none", "--marathon-price-table=prices.yaml",
        f"--marathon-bundle-dir={tmp_path}",
    )
    result.assert_outcomes(passed=1)
    (manifest,) = [json.loads(p.read_text()) for p in tmp_path.glob("*/manifest.json")]
    assert manifest["config"]["max_cost_usd"] is None
    digest = load_price_table(pytester.path / "prices.yaml").digest
    assert manifest["config"]["price_table_digest"] == digest


def test_the_cli_run_says_when_calls_were_refused_at_its_budget(
    double: ModelDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = _scenario(tmp_path / "metered.yaml", 1)
    code = main(["run", "--app", "boutique", "--agent", f'cmd:"{sys.executable}" "{PROGRAM}"',
                 "--seed", "1", "--scenario", str(scenario), "--out", str(tmp_path / "b"),
                 "--baseline-cache", str(tmp_path / "cache"), "--max-cost", "0.000001",
                 "--alerts", "0"])
    assert code == 0
    out = capsys.readouterr().out
    assert "metering: 1 model calls refused: the run's budget was spent" in out
    assert len(double.model_exchanges()) == 1
