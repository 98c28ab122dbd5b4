"""The scripted model double speaks the three wire formats the agent CLIs use, streamed and not,
and records what it was sent (the double is what the CLI preset and metering tests stand on)."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

import pytest
from model_double import ModelDouble, SreScript, Text, ToolCall

ALERTS_TOOL = {"type": "function", "name": "mcp__marathon__get_alerts", "parameters": {"type": "object"}}


def post(url: str, path: str, body: dict[str, Any], headers: dict[str, str] | None = None):
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json", **(headers or {})})
    response = connection.getresponse()
    return response.status, response.getheader("Content-Type") or "", response.read().decode()


def sse(text: str) -> list[tuple[str | None, Any]]:
    """(event name, data) per server-sent event; `[DONE]` stays a string."""
    events = []
    for frame in text.strip().split("\n\n"):
        name, data = None, []
        for line in frame.splitlines():
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                data.append(line[len("data: "):])
        payload = "\n".join(data)
        events.append((name, payload if payload == "[DONE]" else json.loads(payload)))
    return events


@pytest.fixture
def double():
    with ModelDouble(lambda conv: ToolCall(conv.tool_named("get_alerts"), {"state": "firing"})) as running:
        yield running


def test_responses_stream_carries_a_function_call_and_usage(double):
    body = {"model": "m", "stream": True, "input": "hi", "tools": [ALERTS_TOOL]}
    status, kind, text = post(double.anthropic_base_url, "/v1/responses", body)
    events = sse(text)
    assert (status, kind) == (200, "text/event-stream")
    names = [name for name, _ in events]
    assert names[0] == "response.created" and names[-1] == "response.completed"
    assert all(data["type"] == name for name, data in events)
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    [done] = [data["item"] for name, data in events if name == "response.output_item.done"]
    assert done["type"] == "function_call" and done["name"] == "mcp__marathon__get_alerts"
    pieces = "".join(d["delta"] for n, d in events if n == "response.function_call_arguments.delta")
    assert json.loads(pieces) == json.loads(done["arguments"]) == {"state": "firing"}
    usage = events[-1][1]["response"]["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
    assert (usage["input_tokens"], usage["output_tokens"]) == double.exchanges[-1].usage


def test_responses_text_streams_deltas_that_add_up_to_the_final_item():
    answer = "All quiet.\n```json\n{\"incidents\": []}\n```"
    with ModelDouble(lambda conv: Text(answer)) as double:
        _, _, text = post(double.openai_base_url, "/v1/responses", {"model": "m", "stream": True, "input": "hi"})
    events = sse(text)
    assert "".join(d["delta"] for n, d in events if n == "response.output_text.delta") == answer
    [done] = [d["item"] for n, d in events if n == "response.output_item.done"]
    assert done["content"][0]["text"] == answer


def test_chat_completions_stream_ends_with_a_usage_chunk_and_done(double):
    tools = [{"type": "function", "function": {"name": "get_alerts", "parameters": {}}}]
    body = {"model": "m", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    events = sse(post(double.openai_base_url, "/v1/chat/completions", body)[2])
    assert events[-1] == (None, "[DONE]")
    usage_chunk = events[-2][1]
    assert usage_chunk["choices"] == [] and usage_chunk["usage"]["prompt_tokens"] > 0
    calls = [c for _, d in events[:-2] for ch in d["choices"] for c in ch["delta"].get("tool_calls", [])]
    assert calls[0]["function"]["name"] == "get_alerts"
    assert json.loads("".join(c["function"]["arguments"] for c in calls)) == {"state": "firing"}
    assert events[-3][1]["choices"][0]["finish_reason"] == "tool_calls"


def test_messages_stream_has_the_anthropic_event_sequence_with_tool_input_deltas(double):
    body = {"model": "m", "stream": True, "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "mcp__marathon__get_alerts", "input_schema": {"type": "object"}}]}
    events = sse(post(double.anthropic_base_url, "/v1/messages?beta=true", body)[2])
    names = [n for n, _ in events if n != "ping"]
    assert names == ["message_start", "content_block_start", *["content_block_delta"] * (len(names) - 5),
                     "content_block_stop", "message_delta", "message_stop"]
    assert events[1][1]["content_block"]["type"] == "tool_use"
    partial = "".join(d["delta"]["partial_json"] for n, d in events if n == "content_block_delta")
    assert json.loads(partial) == {"state": "firing"}
    delta = next(d for n, d in events if n == "message_delta")
    assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"]["output_tokens"] > 0
    assert events[0][1]["message"]["usage"]["input_tokens"] == double.exchanges[-1].usage[0]


def test_non_streaming_answers_and_token_counting():
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    with ModelDouble() as double:  # no tools offered: the default script answers "OK"
        status, _, text = post(double.anthropic_base_url, "/v1/messages", body)
        assert status == 200 and json.loads(text)["content"] == [{"type": "text", "text": "OK"}]
        status, _, text = post(double.anthropic_base_url, "/v1/messages/count_tokens", body)
        assert status == 200 and json.loads(text)["input_tokens"] > 0
        status, _, text = post(double.openai_base_url, "/v1/chat/completions", {"model": "m", "messages": []})
        assert status == 200 and json.loads(text)["choices"][0]["message"]["content"] == "OK"
        status, _, text = post(double.openai_base_url, "/v1/responses", {"model": "m", "input": "hi"})
        assert status == 200 and json.loads(text)["output"][0]["content"][0]["text"] == "OK"
        assert [e.api for e in double.exchanges] == ["messages", "count_tokens", "chat", "responses"]


def test_keys_failures_and_script_errors_answer_with_http_errors():
    def broken(conv):
        raise RuntimeError("script bug")

    with ModelDouble(broken, require_key="k") as double:
        body = {"model": "m", "input": "hi"}
        assert post(double.openai_base_url, "/v1/responses", body)[0] == 401
        double.fail_next = [(429, {"error": {"message": "slow down"}})]
        assert post(double.openai_base_url, "/v1/responses", body, {"Authorization": "Bearer k"})[0] == 429
        status, _, text = post(double.openai_base_url, "/v1/responses", body, {"x-api-key": "k"})
        assert status == 500 and "script bug" in text
        assert [e.status for e in double.exchanges] == [401, 429, 500]


def test_the_sre_script_reads_reports_acts_and_answers_with_the_block():
    script = SreScript(notes=False)
    tools = [{"type": "function", "name": f"mcp__marathon__{t}"} for t in ("get_alerts", "report_incidents", "restart_service")]
    alerts = {"alerts": [{"alert_id": "a-1", "state": "firing", "labels": {"service": "cartservice"}}]}
    answers = [alerts, {"incidents": []}, {"ok": True, "changed": True}]
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "go"}]
    with ModelDouble(script) as double:
        for answer in [*answers, None]:
            events = sse(post(double.openai_base_url, "/v1/responses", {"model": "m", "stream": True, "input": items, "tools": tools})[2])
            item = next(d["item"] for n, d in events if n == "response.output_item.done")
            if answer is None:
                break
            items += [item, {"type": "function_call_output", "call_id": item["call_id"], "output": json.dumps(answer)}]
    assert script.decisions == [
        "mcp__marathon__get_alerts", "mcp__marathon__report_incidents", "mcp__marathon__restart_service", "text",
    ]
    restart = json.loads(items[5]["arguments"])
    assert restart == {"incident_id": "inc-cartservice", "service": "cartservice"}
    assert '"incident_id": "inc-cartservice"' in item["content"][0]["text"]
