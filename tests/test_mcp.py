"""A real MCP session (the SDK's stdio client spawning the server) sees the same 19 tools and gets
the same answers as the in-process client on an identically seeded twin."""

from __future__ import annotations

import difflib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from pytest_marathon.interface import TOOLS, InProcessClient, serve_http
from pytest_marathon.interface.standalone import standalone_session

SEED = 7
Answers = list[dict[str, Any]]
Step = tuple[str, dict[str, Any] | Callable[[Answers], dict[str, Any]]]


def _first_trace(answers: Answers) -> dict[str, Any]:
    return {"trace_id": answers[4]["traces"][0]["trace_id"]}


def _comment_patch(answers: Answers) -> dict[str, Any]:
    """A harmless repair of emailservice built from the source the session just read."""
    original = answers[11]["text"] + "\n"
    patched = original.replace("\n", "\n# checked by the on-call engineer\n", 1)
    diff = "".join(difflib.unified_diff(original.splitlines(True), patched.splitlines(True), "a/service.py", "b/service.py"))
    return {"incident_id": "inc-1", "service": "emailservice", "diff": diff}


# Every tool at least once, successes and refusals; later arguments come from earlier answers so
# that both transports are driven by what they themselves returned.
SCRIPT: list[Step] = [
    ("get_alerts", {"limit": 5}),
    ("query_metrics", {"query": "sum by (deployment) (kube_deployment_status_replicas_available)"}),
    ("query_metrics", {"query": "sum(traces_span_metrics_calls_total)", "start": -240, "step": 60}),
    ("get_logs", {"service": "frontend", "limit": 3}),
    ("get_traces", {"limit": 2}),
    ("get_trace", _first_trace),
    ("get_topology", {}),
    ("get_resources", {"kind": "pods", "limit": 4}),
    ("get_events", {"limit": 5}),
    ("get_rollout_history", {"service": "cartservice"}),
    ("get_source", {"service": "emailservice"}),
    ("get_source", {"service": "emailservice", "path": "service.py", "limit": 2000}),
    ("restart_service", {"incident_id": "inc-1", "service": "cartservice"}),
    ("report_incidents", {"incidents": [{"incident_id": "inc-1", "status": "open"}]}),
    ("restart_service", {"incident_id": "inc-1", "service": "cartservice"}),
    ("scale_service", {"incident_id": "inc-1", "service": "adservice", "replicas": 2}),
    ("rollback_service", {"incident_id": "inc-1", "service": "adservice"}),
    ("update_config", {"incident_id": "inc-1", "service": "adservice", "env": {"LOG_LEVEL": "debug"}}),
    ("set_feature_flag", {"incident_id": "inc-1", "name": "adsEnabled", "value": "false"}),
    ("propose_patch", {"incident_id": "inc-1", "service": "emailservice", "diff": "garbage"}),
    ("propose_patch", _comment_patch),
    ("build_service_image", {"incident_id": "inc-1", "service": "emailservice"}),
    ("submit_patch", {"incident_id": "inc-1", "service": "emailservice"}),
    ("get_rollout_history", {"service": "emailservice"}),
    ("get_resources", {"kind": "secrets"}),
    ("submit_patch", {"incident_id": "inc-1", "service": "emailservice"}),
    ("scale_service", {"incident_id": "inc-1", "service": "adservice", "replicas": 2}),
]


def _arguments(step: Step, answers: Answers) -> dict[str, Any]:
    args = step[1]
    return args(answers) if callable(args) else args


def _server(command: str, args: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=command, args=[*args, "--app", "boutique", "--seed", str(SEED)])


async def _over_stdio(server: StdioServerParameters, script: list[Step]) -> tuple[list, Answers]:
    answers: Answers = []
    async with Client(server, read_timeout_seconds=120) as client:
        listed = (await client.list_tools()).tools
        for step in script:
            result = await client.call_tool(step[0], _arguments(step, answers))
            answer = json.loads(result.content[0].text)
            assert result.structured_content == answer
            assert result.is_error == ("error" in answer)
            answers.append(answer)
    return listed, answers


def _in_process(script: list[Step]) -> Answers:
    client = InProcessClient(standalone_session("boutique", SEED))
    answers: Answers = []
    for step in script:
        answers.append(client.call(step[0], **_arguments(step, answers)))
    return answers


def _assert_listing_is_the_registry(listed: list) -> None:
    assert len(listed) == 19
    by_name = {tool.name: tool for tool in listed}
    for spec in TOOLS:
        assert by_name[spec.name].input_schema == dict(spec.input_schema)
        assert by_name[spec.name].description == spec.description


def test_stdio_session_lists_nineteen_tools_and_matches_the_in_process_client():
    server = _server(sys.executable, ["-m", "pytest_marathon.interface.mcp_server"])
    listed, remote = anyio.run(_over_stdio, server, SCRIPT)
    _assert_listing_is_the_registry(listed)
    local = _in_process(SCRIPT)
    for step, here, there in zip(SCRIPT, local, remote, strict=True):
        assert here == there, step[0]
    assert {name for name, _ in SCRIPT} == {spec.name for spec in TOOLS}

    by_step = dict(zip(range(len(SCRIPT)), remote, strict=True))
    assert by_step[5]["spans"] and by_step[5]["trace_id"] == by_step[4]["traces"][0]["trace_id"]
    assert by_step[12]["verdict"] == "refused"  # acting before reporting
    assert by_step[19]["verdict"] == "error"  # a diff that is not a diff
    assert by_step[21]["ok"] is True and by_step[22]["ok"] is True
    assert by_step[23]["revisions"][-1]["image"] == by_step[21]["image"]
    assert by_step[24]["verdict"] == "forbidden"
    assert by_step[15]["changed"] is True and by_step[22]["changed"] is True
    # the image already running and the current replica count: answered, not executed
    assert by_step[25]["ok"] is True and by_step[25]["changed"] is False
    assert by_step[26]["changed"] is False and "replicas already 2" in by_step[26]["message"]


@pytest.mark.skipif(shutil.which("pytest-marathon") is None and not (Path(sys.executable).parent / "pytest-marathon").exists(),
                    reason="the pytest-marathon console script is not installed")
def test_the_pytest_marathon_mcp_command_serves_the_same_session():
    command = shutil.which("pytest-marathon") or str(Path(sys.executable).parent / "pytest-marathon")
    script = SCRIPT[:12]
    listed, remote = anyio.run(_over_stdio, _server(command, ["mcp"]), script)
    _assert_listing_is_the_registry(listed)
    assert remote == _in_process(script)


def test_a_live_session_is_reachable_over_streamable_http_on_loopback():
    session = standalone_session("boutique", SEED)

    async def talk(url: str) -> tuple[int, dict]:
        async with Client(url) as client:
            tools = (await client.list_tools()).tools
            result = await client.call_tool("get_resources", {"kind": "deployments", "limit": 2})
            return len(tools), json.loads(result.content[0].text)

    with serve_http(session) as url:
        assert url.startswith("http://127.0.0.1:")
        count, answer = anyio.run(talk, url)
    assert count == 19
    assert answer == InProcessClient(session).call("get_resources", kind="deployments", limit=2)
    assert session.end_invocation()["reads"] == 2


def test_an_in_process_agents_marathon_never_loads_the_mcp_sdk(tmp_path: Path) -> None:
    """The SDK (and pydantic under it) costs about a second to import: a marathon whose agent
    calls the tools in process must not pay it, while an MCP agent's run loads it on use."""
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from pytest_marathon.config import RunConfig\n"
        "from pytest_marathon.runner import record_marathon\n"
        f"record_marathon(RunConfig(app='boutique', agent='runbook', seed=1, scenario='short-5', out_dir=Path({str(tmp_path)!r})))\n"
        "print(sorted(name for name in sys.modules if name == 'mcp' or name.startswith('mcp.')))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    assert run.stdout.strip().splitlines()[-1] == "[]"
    assert list(tmp_path.glob("boutique-runbook-seed1*/manifest.json")), "the marathon recorded no bundle"
