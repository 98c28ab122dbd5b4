"""The `codex` and `claude-code` presets with the real CLIs (npm `@openai/codex`,
`@anthropic-ai/claude-code`) against the scripted model double on loopback.

Each test skips, saying so, when its CLI is not on PATH; CI installs both (`.ci/run`). The model
double speaks the real wire formats (Responses API for Codex, Messages API for Claude Code) and
scripts an SRE: read the alerts, report incidents, restart the worst workload, answer with the
incident block. The presets get their model endpoint from the user's environment
(`OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL`), as they do when no metering proxy runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from model_double import ModelDouble
from pytest_marathon.agents import InvocationContext, resolve_agent
from test_agents_live import World, world  # noqa: F401 - the live-twin fixture

from pytest_marathon.interface import InProcessClient, serve_http
from pytest_marathon.isolation.probe import sandbox_support

CLIS = {"codex": "codex", "claude-code": "claude"}
TINY = Path(__file__).parent / "scenarios" / "tiny-2.yaml"


def needs(preset: str) -> pytest.MarkDecorator:
    cli = CLIS[preset]
    return pytest.mark.skipif(
        shutil.which(cli) is None,
        reason=f"the `{cli}` CLI is not on PATH (npm install -g "
        f"{'@openai/codex' if cli == 'codex' else '@anthropic-ai/claude-code'})",
    )


@pytest.fixture
def double():
    with ModelDouble() as running:
        yield running


def model_env(double: ModelDouble, home: Path) -> dict[str, str]:
    """The user's environment as the presets read it: keys and base URLs naming the double, and a
    home of its own so that no real CLI configuration or login takes part."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in {"CODEX_HOME", "CLAUDE_CONFIG_DIR"}}
    env.update(
        HOME=str(home),
        OPENAI_BASE_URL=double.openai_base_url,
        OPENAI_API_KEY="test-key",
        ANTHROPIC_BASE_URL=double.anthropic_base_url,
        ANTHROPIC_API_KEY="test-key",
    )
    return env


@pytest.fixture
def user_env(double, tmp_path, monkeypatch):
    for name, value in model_env(double, tmp_path / "home").items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)


def invoke(live: World, preset: str, workspace: Path, url: str, n_times: int = 1):
    agent = resolve_agent(preset)
    usages = []
    for _ in range(n_times):
        live.n += 1
        t = live.n * 120.0
        live.advance(t)
        live.session.begin_invocation(live.n, t)
        ctx = InvocationContext(
            n=live.n, t=t, alerts=live.engine.history(), tools=InProcessClient(live.session),
            workspace=workspace, budget_s=90.0, deadline=time.monotonic() + 90.0, mcp_url=url,
        )
        usages.append(agent.invoke(ctx))
        live.session.end_invocation()
    return usages


def assert_did_the_sre_work(live: World, usage, workspace: Path) -> None:
    """What the script asks of any CLI: the three tools called, one restart executed, the
    incident filed, the model used, and a note written in the workspace."""
    assert usage.status == "ok", usage.detail
    called = [r["tool"] for r in live.stream("tool_calls")]
    assert "get_alerts" in called and "report_incidents" in called and "restart_service" in called
    assert {i["tool"] for i in live.stream("interventions") if "tool" in i} == {"restart_service"}
    assert "inc-frontend" in live.final_incidents()
    assert usage.model_calls >= 4 and usage.input_tokens > 0
    assert "inc-frontend" in (workspace / "notes" / "invocation-2.md").read_text()  # notes writable


@needs("codex")
@pytest.mark.parametrize("user_model", [None, "double-1"], ids=["default-model", "unknown-model"])
def test_codex_calls_the_tools_headless_and_files_its_incidents(user_model, world, double, user_env, tmp_path):  # noqa: F811
    """Codex's default model gets code mode (MCP tools reached from the `exec` tool's JavaScript);
    a model Codex has no metadata for gets the MCP tools as functions of namespace `mcp__marathon`.
    The user's model choice comes from their own config."""
    if user_model:
        (tmp_path / "home" / ".codex").mkdir(parents=True)
        (tmp_path / "home" / ".codex" / "config.toml").write_text(f'model = "{user_model}"\n')
    workspace = tmp_path / "ws"
    with serve_http(world.session) as url:
        usage = invoke(world, "codex", workspace, url, 2)[1]
    assert_did_the_sre_work(world, usage, workspace)
    config = tomllib.loads((workspace / ".marathon" / "codex-home" / "config.toml").read_text())
    assert list(config["mcp_servers"]) == ["marathon"]
    assert config["mcp_servers"]["marathon"]["default_tools_approval_mode"] == "approve"
    assert config["web_search"] == "disabled"
    assert config["model_providers"]["marathon"]["base_url"] == double.openai_base_url
    requests = double.model_exchanges("responses")
    assert requests and all(r.headers.get("authorization") == "Bearer test-key" for r in requests)
    models = {r.body["model"] for r in requests}
    assert (models == {user_model}) if user_model else ("double-1" not in models)
    assert not any("web_search" in json.dumps(r.body.get("tools") or []) for r in requests)


@needs("claude-code")
def test_claude_code_calls_the_tools_headless_and_files_its_incidents(world, double, user_env, tmp_path):  # noqa: F811
    workspace = tmp_path / "ws"
    with serve_http(world.session) as url:
        usage = invoke(world, "claude-code", workspace, url, 2)[1]
    assert_did_the_sre_work(world, usage, workspace)
    requests = double.model_exchanges("messages")
    offered = {name for r in requests for name in r.tools}
    assert "mcp__marathon__get_alerts" in offered
    assert not offered & {"WebFetch", "WebSearch", "Bash"}
    # the rules reach the model (the workspace's CLAUDE.md is not read under --setting-sources user)
    assert all("You are the on-call SRE of a live microservice application" in json.dumps(r.body.get("system"))
               for r in requests if r.tools)
    assert all(r.headers.get("x-api-key") == "test-key" for r in requests)


@pytest.mark.parametrize("preset", [pytest.param(p, marks=needs(p)) for p in CLIS])
def test_a_model_error_is_reported_with_the_clis_own_message(preset, world, double, user_env, tmp_path):  # noqa: F811
    double.fail_next = [(400, {"error": {"type": "invalid_request_error", "message": "model double says no"}})] * 20
    with serve_http(world.session) as url:
        [usage] = invoke(world, preset, tmp_path / "ws", url)
    assert usage.status in {"crash", "error"}
    assert "model double says no" in usage.detail, usage.detail


def run_headline(preset: str, double: ModelDouble, tmp_path: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """`pytest --marathon-app=boutique --agent=<preset>` from an empty directory."""
    empty = tmp_path / "empty"
    empty.mkdir()
    env = model_env(double, tmp_path / "home")
    # The CLIs' default models are newer than any published price list: a user prices them with
    # a table of their own (here one price for every model), as the README says.
    prices = tmp_path / "prices.yaml"
    prices.write_text('models:\n  "*": {input: 2.0, output: 8.0}\n', encoding="utf-8")
    argv = [
        sys.executable, "-m", "pytest", "--marathon-app=boutique", f"--agent={preset}",
        f"--marathon-scenario={TINY}", f"--marathon-price-table={prices}",
        "-p", "no:randomly", "-p", "no:cacheprovider",
    ]
    done = subprocess.run(argv, cwd=empty, env=env, capture_output=True, text=True, timeout=600)
    [bundle] = (empty / ".marathon" / "bundles").iterdir()
    return done, bundle


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
@pytest.mark.parametrize("preset", [pytest.param(p, marks=needs(p)) for p in CLIS])
def test_the_headline_command_runs_the_preset_from_an_empty_directory(preset, double, tmp_path):
    done, bundle = run_headline(preset, double, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    tools = [r["tool"] for r in lines(bundle / "tool_calls.jsonl")]
    assert {"get_alerts", "report_incidents", "restart_service"} <= set(tools)
    assert lines(bundle / "reports.jsonl")
    executed = [r for r in lines(bundle / "interventions.jsonl") if r.get("tool") == "restart_service"]
    assert executed and all(r["ok"] and r["changed"] for r in executed)
    invocations = lines(bundle / "invocations.jsonl")
    assert invocations and {r["status"] for r in invocations} == {"ok"}, invocations
    assert all(r["model_calls"] >= 2 for r in invocations)
    # Tokens and dollars are the metering proxy's measurement: every model request the double
    # answered, its tokens as the double reported them, priced by the table.
    assert {r["usage_source"] for r in invocations} == {"proxy"}
    answered = [e for e in double.model_exchanges() if e.api in ("responses", "chat", "messages")]
    assert sum(r["model_calls"] for r in invocations) == len(answered)
    assert sum(r["input_tokens"] for r in invocations) == sum(e.usage[0] for e in answered)
    assert sum(r["output_tokens"] for r in invocations) == sum(e.usage[1] for e in answered)
    dollars = sum(r["cost_usd"] for r in invocations)
    expected = sum(e.usage[0] * 2.0 + e.usage[1] * 8.0 for e in answered) / 1e6
    assert dollars > 0 and abs(dollars - expected) < 1e-6 * max(1, len(invocations)), (dollars, expected)
    isolation = json.loads((bundle / "manifest.json").read_text())["agent_flags"]["isolation"]
    assert isolation == ("sandbox" if sandbox_support().available else "process")


@pytest.mark.parametrize("preset", [pytest.param(p, marks=needs(p)) for p in CLIS])
def test_the_runs_model_endpoint_wins_over_the_users_environment(preset, world, double, tmp_path, monkeypatch):  # noqa: F811
    """With a metering proxy the runner names its URLs on the context; the user's own base URLs
    (here a dead port) are then the proxy's upstream, not the CLI's."""
    for name, value in model_env(double, tmp_path / "home").items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    agent = resolve_agent(preset)
    with serve_http(world.session) as url:
        world.n += 1
        world.advance(120.0)
        world.session.begin_invocation(1, 120.0)
        ctx = InvocationContext(
            n=1, t=120.0, alerts=world.engine.history(), tools=InProcessClient(world.session),
            workspace=tmp_path / "ws", budget_s=60.0, deadline=time.monotonic() + 60.0, mcp_url=url,
            model_base_urls={"openai": double.openai_base_url, "anthropic": double.anthropic_base_url},
        )
        usage = agent.invoke(ctx)
        world.session.end_invocation()
    assert usage.status == "ok", usage.detail
    assert double.model_exchanges() and "get_alerts" in [r["tool"] for r in world.stream("tool_calls")]
