"""`cmd:` programs run under bubblewrap: the endpoints on the context are reachable through the
relay and nothing else is; an intruder program gets nothing and scores as the honest program.

(The codex and claude-code presets go through the same `run_process_invocation(...,
sandbox=ctx.sandbox)`; their sandboxed runs with a scripted model belong with the CLI tests.)
"""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from isolation_support import comparable_score, manifest, need_sandbox, scene
from model_double import ModelDouble, Text
from pytest_marathon.agents.external import write_invocation_files
from pytest_marathon.agents.protocol import InvocationContext

from pytest_marathon.config import RunConfig
from pytest_marathon.interface.invocation import run_process_invocation
from pytest_marathon.isolation.relay import RelayPool
from pytest_marathon.isolation.sandbox import Sandbox
from pytest_marathon.runner import run_marathon

PROGRAMS = Path(__file__).parent / "agent_programs"
HONEST = f'cmd:"{sys.executable}" "{PROGRAMS / "rollback_over_mcp.py"}"'
INTRUDER = f'cmd:"{sys.executable}" "{PROGRAMS / "intruder.py"}"'

LOOK_AROUND = """
import json, os, sys, urllib.request
seen = {}
for name in ("relayed", "other"):
    try:
        seen[name] = urllib.request.urlopen(os.environ[name.upper()], timeout=3).read().decode()
    except Exception as exc:
        seen[name] = type(exc).__name__
open("/tmp/scratch", "w").write("private")
seen["tmp"] = "scratch" in os.listdir("/tmp")
seen["runner_temp"] = os.path.exists(os.environ["RUNNER_TEMP"])
seen["home"] = os.listdir(os.environ["HOME"])
seen["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
seen["salt"] = "MARATHON_SEED_SALT" in os.environ
open("note.txt", "w").write("kept")
print(json.dumps(seen))
"""


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = f"hello from {self.server.server_address[1]}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def servers():
    started = [ThreadingHTTPServer(("127.0.0.1", 0), _Hello) for _ in range(2)]
    for server in started:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield [f"http://127.0.0.1:{s.server_address[1]}/" for s in started]
    for server in started:
        server.shutdown()
        server.server_close()


def test_only_the_relayed_endpoint_is_reachable_and_only_the_workspace_is_kept(
    tmp_path: Path, servers: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    need_sandbox()
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text("credentials")
    monkeypatch.setenv("HOME", str(home))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    relayed, other = servers
    pool = RelayPool()
    try:
        sandbox = Sandbox(workspace, relays=pool.relay([relayed]))
        runner_temp = tmp_path / "runner-temp.txt"  # beside the workspace, in the runner's /tmp
        runner_temp.write_text("not for agents")
        env = {**os.environ, "RELAYED": relayed, "OTHER": other, "MARATHON_SEED_SALT": "x",
               "RUNNER_TEMP": str(runner_temp)}
        outcome = run_process_invocation([sys.executable, "-c", LOOK_AROUND], cwd=workspace,
                                         env=env, budget_s=30, sandbox=sandbox)
    finally:
        pool.close()
    assert outcome.status == "ok", outcome.stderr_tail
    seen = json.loads(outcome.stdout_tail)
    assert seen["relayed"] == f"hello from {relayed.rsplit(':', 1)[1].strip('/')}"
    assert seen["other"] == "URLError"  # no route out of the sandbox's own loopback
    assert seen["tmp"] is True and seen["runner_temp"] is False  # a private /tmp
    assert seen["home"] == []
    assert max(seen["pids"]) < 20  # its own pid namespace: the runner is not there
    assert seen["salt"] is False
    assert (workspace / "note.txt").read_text() == "kept"
    assert not Path("/tmp/scratch").exists()


def test_the_runner_never_writes_through_links_planted_in_the_workspace(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (workspace / "mcp.json").symlink_to(outside / "mcp-target")
    (workspace / ".marathon").mkdir()
    (workspace / ".marathon" / "codex-home").symlink_to(outside)  # a preset's private home
    (workspace / ".marathon" / "alerts.json").symlink_to(outside / "alerts-target")
    ctx = InvocationContext(n=1, t=120.0, alerts=[{"alert_id": "a-1"}], tools=None,
                            workspace=workspace, budget_s=5, deadline=0,
                            mcp_url="http://127.0.0.1:9/mcp")
    env = write_invocation_files(ctx)
    assert list(outside.iterdir()) == []
    assert json.loads(Path(env["MARATHON_ALERTS"]).read_text()) == [{"alert_id": "a-1"}]
    assert not (workspace / "mcp.json").is_symlink()
    assert not (workspace / ".marathon" / "codex-home").exists()


def test_a_cmd_intruder_gets_nothing_and_scores_as_the_honest_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_sandbox()
    cache = tmp_path / "cache"
    cache.mkdir()
    with scene(tmp_path, cache, monkeypatch) as where:
        honest, intruder = where.honest_then_intruder(HONEST, INTRUDER, monkeypatch)
    assert intruder.first_failed_invocation is None
    assert intruder.invocations == {"ok": 17}
    assert comparable_score(intruder.score_report) == comparable_score(honest.score_report)
    assert intruder.score > 0
    assert manifest(intruder.bundle)["agent_flags"]["isolation"] == "sandbox"


def test_a_sandboxed_program_reaches_its_model_only_through_the_metering_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proxy's loopback port is relayed into the sandbox; the upstream (the model double,
    on another loopback port) is not: the calls arrive, metered, with the user's key added."""
    need_sandbox()
    key = "sk-the-users-own-key"
    with ModelDouble(script=lambda conv: Text("Nothing to do."), require_key=key) as double:
        monkeypatch.setenv("OPENAI_BASE_URL", double.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", key)
        monkeypatch.setenv("METER_AGENT_REPORT", "/dev/null")
        scenario = tmp_path / "quiet.yaml"
        scenario.write_text(
            "name: quiet\ndescription: no faults\nwarmup_s: 60\ninjection_window_s: 240\n"
            "observation_s: 0\narrivals: 0\nintensity: {start: 1.0, end: 1.0}\n"
            "lifetime_s: {min: 240, max: 720}\nmax_concurrent: 1\n"
        )
        agent = f'cmd:"{sys.executable}" "{PROGRAMS / "openai_caller.py"}"'
        config = RunConfig(app="boutique", agent=agent, seed=1, scenario=str(scenario),
                           out_dir=tmp_path / "out")
        result = run_marathon(config, baseline_cache=None, score=False)
        calls = len(double.model_exchanges())
    records = [json.loads(line) for line in (result.bundle / "invocations.jsonl").read_text()
               .splitlines()]
    assert [r["status"] for r in records] == ["ok", "ok"]
    assert [(r["usage_source"], r["model_calls"]) for r in records] == [("proxy", 2)] * 2
    assert calls == 4
    assert manifest(result.bundle)["agent_flags"]["isolation"] == "sandbox"
