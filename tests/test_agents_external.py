"""External agents: a program per invocation reaching the live session over MCP, and the
Codex / Claude Code presets (their CLIs cannot run here, so a stand-in executable plays the CLI)."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pytest_marathon.agents import InvocationContext, resolve_agent
from pytest_marathon.agents.external import AgentUnavailable
from test_agents_live import BAD, GOOD, World, world  # noqa: F401 - the live-twin fixture

from pytest_marathon.interface import InProcessClient, serve_http

PROGRAM = Path(__file__).parent / "agent_programs" / "rollback_over_mcp.py"
CREDITED_SEED = 2  # a short-5 schedule whose first fault is a change the program can roll back


def context(live: World, workspace: Path, url: str | None, budget: float = 60.0) -> InvocationContext:
    live.n += 1
    t = live.n * 120.0
    live.advance(t)
    live.session.begin_invocation(live.n, t)
    return InvocationContext(
        n=live.n, t=t, alerts=live.engine.history(), tools=InProcessClient(live.session),
        workspace=workspace, budget_s=budget, deadline=time.monotonic() + budget, mcp_url=url,
    )


def test_a_cmd_program_talks_mcp_to_the_live_session_and_repairs_the_fault(world, tmp_path):  # noqa: F811
    agent = resolve_agent(f'cmd:"{sys.executable}" "{PROGRAM}"')
    with serve_http(world.session) as url:
        usages = []
        for _ in range(3):
            usages.append(agent.invoke(context(world, tmp_path, url)))
            world.session.end_invocation()
    assert [u.status for u in usages] == ["ok", "ok", "ok"]
    interventions = world.stream("interventions")
    assert [(i["tool"], i["target"], i["incident_id"]) for i in interventions] == [
        ("rollback_service", "frontend", "cmd-frontend-r2")
    ]
    assert world.final_incidents()["cmd-frontend-r2"]["alert_ids"]
    assert world.backend.artifact_value("env:frontend/CART_SERVICE_ADDR") == GOOD
    assert json.loads((tmp_path / "mcp.json").read_text())["mcpServers"]["marathon"]["url"] == url


def test_the_program_gets_the_alert_file_its_workspace_and_the_mcp_url(world, tmp_path):  # noqa: F811
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent(
        """
        import json, os
        env = {k: v for k, v in os.environ.items() if k.startswith("MARATHON_")}
        json.dump({"env": env, "cwd": os.getcwd(), "alerts": json.load(open(env["MARATHON_ALERTS"]))},
                  open("seen.json", "w"))
        """
    ))
    workspace = tmp_path / "ws"
    ctx = context(world, workspace, "http://127.0.0.1:9/mcp")
    usage = resolve_agent(f'cmd:"{sys.executable}" "{probe}"').invoke(ctx)
    seen = json.loads((workspace / "seen.json").read_text())
    assert usage.status == "ok"
    assert seen["cwd"] == str(workspace)
    assert seen["env"]["MARATHON_MCP_URL"] == "http://127.0.0.1:9/mcp"
    assert seen["env"]["MARATHON_INVOCATION"] == str(ctx.n)
    assert seen["alerts"] == json.loads(json.dumps(list(ctx.alerts)))


def test_a_program_past_its_budget_is_killed_and_reported_as_timeout(world, tmp_path):  # noqa: F811
    agent = resolve_agent(f'cmd:"{sys.executable}" -c "import time; time.sleep(60)"')
    started = time.monotonic()
    usage = agent.invoke(context(world, tmp_path, "http://127.0.0.1:9/mcp", budget=1.0))
    assert usage.status == "timeout"
    assert time.monotonic() - started < 10


def fake_cli(directory: Path, name: str, script: str) -> None:
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(script))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.mark.parametrize("preset, cli", [("codex", "codex"), ("claude-code", "claude")])
def test_presets_without_their_cli_say_what_is_missing(preset, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(AgentUnavailable, match=f"needs the `{cli}` CLI on PATH"):
        resolve_agent(preset)


@pytest.mark.parametrize("preset, cli, variable", [("codex", "codex", "OPENAI_API_KEY"), ("claude-code", "claude", "ANTHROPIC_API_KEY")])
def test_presets_without_credentials_say_what_is_missing(preset, cli, variable, tmp_path, monkeypatch):
    fake_cli(tmp_path / "bin", cli, "print('unused')\n")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("OPENAI_API_KEY", "CODEX_API_KEY", "ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(AgentUnavailable, match=f"no credentials: set {variable}"):
        resolve_agent(preset)


CLAUDE_STAND_IN = """
import json, os, sys
assert "-p" in sys.argv and "--mcp-config" in sys.argv and "--strict-mcp-config" in sys.argv
assert sys.argv[sys.argv.index("--output-format") + 1] == "stream-json"
config = json.load(open(sys.argv[sys.argv.index("--mcp-config") + 1]))
assert config["mcpServers"]["marathon"]["url"] == os.environ["MARATHON_MCP_URL"]
assert "end your final answer with one fenced json block" in open("CLAUDE.md").read().lower().replace("\\n", " ")
alerts = json.load(open(os.environ["MARATHON_ALERTS"]))
ids = [a["alert_id"] for a in alerts
       if "frontend" in (a["labels"].get("deployment"), a["labels"].get("service_name"))]
block = {"incidents": [{"incident_id": "cc-1", "alert_ids": ids, "status": "open",
         "root_cause": {"culprits": ["frontend"], "artifact": "env:frontend/CART_SERVICE_ADDR",
                        "category": "configuration", "text": "cart address changed"}}]}
answer = "The frontend cannot reach the cart.\\n```json\\n" + json.dumps(block) + "\\n```"
# the stream-json lines Claude Code prints: init, one assistant message per response, the result
print(json.dumps({"type": "system", "subtype": "init", "mcp_servers": [{"name": "marathon", "status": "connected"}]}))
for i in range(3):
    print(json.dumps({"type": "assistant", "message": {"id": f"msg_{i}", "content": [{"type": "text", "text": "..."}]}}))
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": answer, "num_turns": 3,
                  "total_cost_usd": 0.12, "usage": {"input_tokens": 900, "output_tokens": 80}}))
"""


def test_claude_code_preset_configures_the_cli_and_files_its_incident_block(world, tmp_path, monkeypatch):  # noqa: F811
    fake_cli(tmp_path / "bin", "claude", CLAUDE_STAND_IN)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    agent = resolve_agent("claude-code")
    with serve_http(world.session) as url:
        usage = agent.invoke(context(world, tmp_path / "ws", url))
    assert usage.status == "ok", usage.detail
    assert (usage.model_calls, usage.input_tokens, usage.output_tokens, usage.cost_usd) == (3, 900, 80, 0.12)
    incident = world.final_incidents()["cc-1"]
    assert incident["root_cause"]["artifact"] == "env:frontend/CART_SERVICE_ADDR"
    assert incident["alert_ids"]
    assert world.backend.artifact_value("env:frontend/CART_SERVICE_ADDR") == BAD


def test_a_preset_answer_without_a_block_is_an_error_not_a_crash(world, tmp_path, monkeypatch):  # noqa: F811
    fake_cli(tmp_path / "bin", "claude", "import json; print(json.dumps({'type': 'result', 'subtype': 'success', 'result': 'all good'}))\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    usage = resolve_agent("claude-code").invoke(context(world, tmp_path / "ws", "http://127.0.0.1:9/mcp"))
    assert usage.status == "error"
    assert "does not end with an incident JSON block" in usage.detail
    assert world.stream("reports") == []


@pytest.mark.slow
def test_a_cmd_agents_repair_during_a_marathon_is_credited_by_the_scorer(tmp_path):
    from pytest_marathon.config import RunConfig
    from pytest_marathon.runner import run_marathon

    spec = f'cmd:"{sys.executable}" "{PROGRAM}"'
    config = RunConfig(app="boutique", agent=spec, seed=CREDITED_SEED, scenario="short-5", out_dir=tmp_path)
    result = run_marathon(config, baseline_cache=None)
    report = result.score_report
    repaired = [row for row in report["per_fault"] if row["repaired"]]
    assert repaired, report["per_fault"]
    lines = (result.bundle / "interventions.jsonl").read_text().splitlines()
    executed = [json.loads(line) for line in lines if '"event":"completed"' not in line]
    assert executed and all(i["incident_id"].startswith("cmd-") for i in executed)
    statuses = [json.loads(line)["status"] for line in (result.bundle / "invocations.jsonl").read_text().splitlines()]
    assert set(statuses) == {"ok"}


CODEX_STAND_IN = """
import json, os, pathlib, sys, tomllib
home = pathlib.Path(os.environ["CODEX_HOME"])
config = tomllib.loads((home / "config.toml").read_text())
seen = {"servers": sorted(config["mcp_servers"]), "model": config.get("model"),
        "auth": (home / "auth.json").read_text(), "argv": sys.argv[1:]}
answer = "```json\\n" + json.dumps({"incidents": []}) + "\\n```"
for event in ({"type": "thread.started", "thread_id": "t-1"},
              {"type": "item.completed", "item": {"type": "agent_message", "text": json.dumps(seen) + "\\n" + answer}},
              {"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 2}}):
    print(json.dumps(event))
"""


def test_codex_takes_credentials_and_model_from_codex_home_but_none_of_its_servers(world, tmp_path, monkeypatch):  # noqa: F811
    fake_cli(tmp_path / "bin", "codex", CODEX_STAND_IN)
    user_home = tmp_path / "user-codex"
    user_home.mkdir()
    (user_home / "auth.json").write_text('{"tokens": "the user login"}')
    (user_home / "config.toml").write_text(
        'model = "gpt-x"\n\n[mcp_servers.github]\ncommand = "github-mcp"\n'
    )
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODEX_HOME", str(user_home))
    for name in ("OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    agent = resolve_agent("codex")  # the credential check reads $CODEX_HOME/auth.json
    ctx = context(world, tmp_path / "ws", "http://127.0.0.1:9/mcp")
    usage = agent.invoke(ctx)
    text = (tmp_path / "ws" / ".marathon" / "output-001").read_text()
    seen = json.loads(json.loads(text.splitlines()[1])["item"]["text"].split("\n")[0])
    assert usage.status == "ok", usage.detail
    assert seen["servers"] == ["marathon"] and seen["model"] == "gpt-x"
    assert seen["auth"] == '{"tokens": "the user login"}'
    assert (usage.model_calls, usage.input_tokens, usage.output_tokens) == (1, 10, 2)


def test_a_codex_run_whose_every_tool_call_was_refused_is_an_error_with_codex_s_message(world, tmp_path, monkeypatch):  # noqa: F811
    refused = {"type": "mcp_tool_call", "server": "marathon", "tool": "get_alerts", "status": "failed",
               "error": {"message": "MCP tool call requires approval, but approval policy is never"}}
    answer = {"type": "agent_message", "text": "```json\n{\"incidents\": []}\n```"}
    events = [{"type": "item.completed", "item": refused}, {"type": "item.completed", "item": answer},
              {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 1}}]
    fake_cli(tmp_path / "bin", "codex", "".join(f"print({json.dumps(json.dumps(e))})\n" for e in events))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    usage = resolve_agent("codex").invoke(context(world, tmp_path / "ws", "http://127.0.0.1:9/mcp"))
    assert usage.status == "error"
    assert "all 1 MCP tool calls failed" in usage.detail and "requires approval" in usage.detail
