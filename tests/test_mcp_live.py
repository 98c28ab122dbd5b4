"""`pytest-marathon mcp --speed`: a live marathon any MCP client can drive, scored like any run,
and the session's rule that nothing acts while the world advances between invocations."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import anyio
from mcp import Client

from pytest_marathon.interface import ToolSession
from pytest_marathon.interface.standalone import warmed_up
from pytest_marathon.scoring import score_bundle


def test_a_session_refuses_calls_between_invocations_and_records_none() -> None:
    recorded: list[tuple[str, dict]] = []
    backend, engine = warmed_up("boutique", 1)
    session = ToolSession(backend, alerts=engine.history,
                          sink=lambda stream, record: recorded.append((stream, record)))
    session.begin_invocation(1, 0.0)
    assert "error" not in session.call("get_alerts")
    session.end_invocation()
    for tool, args in (("get_alerts", {}), ("restart_service", {"service": "cartservice",
                                                                "incident_id": "inc-1"})):
        answer = session.call(tool, args)
        assert answer["verdict"] == "refused" and "no invocation is open" in answer["error"]
    assert [stream for stream, _ in recorded] == ["tool_calls"]  # only the call made while open
    session.begin_invocation(2, 120.0)
    assert "error" not in session.call("get_alerts")


SCENARIO = """\
name: live-test
description: Two faults in four minutes, for driving a live marathon in a test
warmup_s: 300
injection_window_s: 240
observation_s: 120
arrivals: 2
intensity: {start: 1.0, end: 1.0}
lifetime_s: {min: 120, max: 200}
max_concurrent: 2
"""


async def _drive(url: str) -> dict:
    """What a person would do in the Inspector: read the alerts, file an incident."""
    async with Client(url) as client:
        listed = await client.list_tools()
        answer = await client.call_tool(
            "report_incidents",
            {"incidents": [{"incident_id": "by-hand", "alert_ids": [], "status": "open"}]},
        )
        return {"tools": len(listed.tools), "report": json.loads(answer.content[0].text)}


def test_a_live_marathon_is_driven_over_mcp_and_scored(tmp_path: Path) -> None:
    scenario = tmp_path / "live.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest_marathon", "mcp", "--http", "0", "--speed", "30",
         "--scenario", str(scenario), "--out", str(tmp_path / "bundles")],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    lines: list[str] = []
    url: list[str] = []
    announced = threading.Event()

    def read_stderr() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if line.startswith("serving MCP on "):
                url.append(line.split()[-1])
                announced.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert announced.wait(120), "".join(lines)
        driven = anyio.run(_drive, url[0])
        process.wait(timeout=300)  # stderr belongs to the reader thread; stdout is short
        assert process.stdout is not None
        stdout = process.stdout.read()
    finally:
        process.kill()
    reader.join(5)
    assert process.returncode == 0, "".join(lines)
    assert driven["tools"] == 19 and "error" not in driven["report"], driven
    assert any(line.startswith("invocation 3 at t=240 s") for line in lines), "".join(lines)
    assert "mcp-client on boutique" in stdout
    bundle = next((tmp_path / "bundles").iterdir())
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["agent"] == "mcp-client"
    calls = [json.loads(line) for line in (bundle / "tool_calls.jsonl").read_text().splitlines()]
    assert [(c["tool"], c["invocation"]) for c in calls] == [("report_incidents", 1)]
    assert score_bundle(bundle)["scorer_version"]


def test_speed_must_be_positive_and_served_over_http() -> None:
    for args, needle in ((["--speed", "0", "--http", "0"], "--speed must be positive"),
                         (["--speed", "10"], "--speed needs --http")):
        done = subprocess.run([sys.executable, "-m", "pytest_marathon", "mcp", *args],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 2 and needle in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
