"""A real MCP session (the SDK's stdio client spawning the server) sees the same 19 tools and gets
the same answers as the in-process client on an identically seeded twin."""

from __future__ import annotations

import json
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from pytest_marathon.interface import TOOLS, InProcessClient, serve_http
from pytest_marathon.interface.standalone import standalone_session

SEED = 7
SCRIPT: list[tuple[str, dict]] = [
    ("get_alerts", {"limit": 5}),
    ("query_metrics", {"query": "sum by (deployment) (kube_deployment_status_replicas_available)"}),
    ("query_metrics", {"query": "sum(log_lines_total)", "start": -240, "step": 60}),
    ("get_logs", {"service": "frontend", "limit": 3}),
    ("get_traces", {"limit": 2}),
    ("get_trace", {"trace_id": "0000"}),
    ("get_topology", {}),
    ("get_resources", {"kind": "pods", "limit": 4}),
    ("get_events", {"limit": 5}),
    ("get_rollout_history", {"service": "cartservice"}),
    ("get_source", {"service": "cartservice"}),
    ("restart_service", {"incident_id": "inc-1", "service": "cartservice"}),
    ("report_incidents", {"incidents": [{"incident_id": "inc-1", "status": "open"}]}),
    ("restart_service", {"incident_id": "inc-1", "service": "cartservice"}),
    ("scale_service", {"incident_id": "inc-1", "service": "adservice", "replicas": 2}),
    ("rollback_service", {"incident_id": "inc-1", "service": "adservice"}),
    ("update_config", {"incident_id": "inc-1", "service": "adservice", "env": {"LOG_LEVEL": "debug"}}),
    ("set_feature_flag", {"incident_id": "inc-1", "name": "adsEnabled", "value": "false"}),
    ("propose_patch", {"incident_id": "inc-1", "service": "emailservice", "diff": "garbage"}),
    ("build_service_image", {"incident_id": "inc-1", "service": "emailservice"}),
    ("submit_patch", {"incident_id": "inc-1", "service": "emailservice"}),
    ("get_resources", {"kind": "secrets"}),
]


async def _over_stdio() -> tuple[list, list[dict]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "pytest_marathon.interface.mcp_server", "--app", "boutique", "--seed", str(SEED)],
    )
    answers = []
    async with Client(params, read_timeout_seconds=120) as client:
        listed = (await client.list_tools()).tools
        for name, args in SCRIPT:
            result = await client.call_tool(name, args)
            answer = json.loads(result.content[0].text)
            assert result.is_error == ("error" in answer)
            answers.append(answer)
    return listed, answers


def test_stdio_session_lists_nineteen_tools_and_matches_the_in_process_client():
    listed, remote = anyio.run(_over_stdio)
    assert len(listed) == 19
    by_name = {tool.name: tool for tool in listed}
    for spec in TOOLS:
        assert by_name[spec.name].input_schema == dict(spec.input_schema)
        assert by_name[spec.name].description == spec.description

    local_client = InProcessClient(standalone_session("boutique", SEED))
    local = [local_client.call(name, **args) for name, args in SCRIPT]
    for (name, _), here, there in zip(SCRIPT, local, remote, strict=True):
        assert here == there, name
    assert {name for name, _ in SCRIPT} == {spec.name for spec in TOOLS}
    assert remote[-1]["verdict"] == "forbidden"


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
