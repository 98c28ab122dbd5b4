"""A turn in the OpenAI wire formats: Responses API and Chat Completions, streamed and not.

Responses streaming follows the API reference's event list
(https://platform.openai.com/docs/api-reference/responses-streaming) and what Codex reads of it
(openai/codex, codex-rs/codex-api/src/sse/responses.rs: `response.created`,
`response.output_item.added`, `response.output_text.delta`, `response.output_item.done` whose
`item` is a full ResponseItem, and `response.completed` whose `response` has `id` and `usage`
with `input_tokens`, `input_tokens_details.cached_tokens`, `output_tokens`,
`output_tokens_details.reasoning_tokens`, `total_tokens`; a stream without
`response.completed` is an error there). Free-form tools (Codex's code-mode `exec`) are
`custom_tool_call` items (`call_id`, `name`, `input`) streamed with
`response.custom_tool_call_input.delta`/`.done`. Each SSE event is sent as `event: <type>` plus
`data: <json>` with a `sequence_number`.

Chat Completions streaming (https://platform.openai.com/docs/api-reference/chat-streaming):
`chat.completion.chunk` objects whose `choices[0].delta` carries `role`, `content` pieces or
`tool_calls` pieces (`index`, `id`, `type`, `function.name`, `function.arguments`), a last choice
chunk with `finish_reason`, then, when `stream_options.include_usage` is set, a chunk with empty
`choices` and `usage` (`prompt_tokens`, `completion_tokens`, `total_tokens`), then `data: [DONE]`.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .script import ToolCall, Turn

Event = tuple[str | None, Any]
DEFAULT_NAMESPACE = "functions"  # tools in Codex's `functions` namespace are called by bare name  # (SSE event name or None, data: JSON value or a raw string)


def _pieces(text: str, size: int = 24) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def responses_item(turn: Turn, n: int) -> dict[str, Any]:
    if isinstance(turn, ToolCall) and turn.custom:
        item = {
            "id": f"ctc_{n}",
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": f"call_{n}",
            "name": turn.name,
            "input": str(turn.arguments.get("input") or ""),
        }
        if turn.namespace and turn.namespace != DEFAULT_NAMESPACE:
            item["namespace"] = turn.namespace
        return item
    if isinstance(turn, ToolCall):
        item: dict[str, Any] = {
            "id": f"fc_{n}",
            "type": "function_call",
            "status": "completed",
            "call_id": f"call_{n}",
            "name": turn.name,
            "arguments": json.dumps(turn.arguments),
        }
        if turn.namespace and turn.namespace != DEFAULT_NAMESPACE:
            item["namespace"] = turn.namespace
        return item
    return {
        "id": f"msg_{n}",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
    }


def responses_usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


def responses_object(turn: Turn, n: int, model: str, usage: dict[str, Any] | None, status: str) -> dict[str, Any]:
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": [responses_item(turn, n)] if status == "completed" else [],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
        "error": None,
        "incomplete_details": None,
    }


def responses_json(turn: Turn, n: int, model: str, usage: tuple[int, int]) -> dict[str, Any]:
    return responses_object(turn, n, model, responses_usage(*usage), "completed")


def responses_events(turn: Turn, n: int, model: str, usage: tuple[int, int]) -> list[Event]:
    done = responses_item(turn, n)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": responses_object(turn, n, model, None, "in_progress")},
        {"type": "response.in_progress", "response": responses_object(turn, n, model, None, "in_progress")},
    ]
    if isinstance(turn, ToolCall) and turn.custom:
        added = {**done, "status": "in_progress", "input": ""}
        events.append({"type": "response.output_item.added", "output_index": 0, "item": added})
        for piece in _pieces(done["input"]):
            events.append(
                {"type": "response.custom_tool_call_input.delta", "item_id": done["id"], "output_index": 0, "delta": piece}
            )
        events.append(
            {"type": "response.custom_tool_call_input.done", "item_id": done["id"], "output_index": 0, "input": done["input"]}
        )
    elif isinstance(turn, ToolCall):
        added = {**done, "status": "in_progress", "arguments": ""}
        events.append({"type": "response.output_item.added", "output_index": 0, "item": added})
        for piece in _pieces(done["arguments"]):
            events.append(
                {"type": "response.function_call_arguments.delta", "item_id": done["id"], "output_index": 0, "delta": piece}
            )
        events.append(
            {"type": "response.function_call_arguments.done", "item_id": done["id"], "output_index": 0, "arguments": done["arguments"]}
        )
    else:
        added = {**done, "status": "in_progress", "content": []}
        part = {"type": "output_text", "text": "", "annotations": []}
        where = {"item_id": done["id"], "output_index": 0, "content_index": 0}
        events.append({"type": "response.output_item.added", "output_index": 0, "item": added})
        events.append({"type": "response.content_part.added", **where, "part": part})
        for piece in _pieces(turn.text):
            events.append({"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []})
        events.append({"type": "response.output_text.done", **where, "text": turn.text, "logprobs": []})
        events.append({"type": "response.content_part.done", **where, "part": {**part, "text": turn.text}})
    events.append({"type": "response.output_item.done", "output_index": 0, "item": done})
    events.append({"type": "response.completed", "response": responses_json(turn, n, model, usage)})
    return [(e["type"], {**e, "sequence_number": i}) for i, e in enumerate(events)]


def _chat_message(turn: Turn, n: int) -> dict[str, Any]:
    if isinstance(turn, ToolCall):
        call = {"id": f"call_{n}", "type": "function", "function": {"name": turn.name, "arguments": json.dumps(turn.arguments)}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": turn.text}


def _chat_usage(usage: tuple[int, int]) -> dict[str, int]:
    return {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}


def chat_json(turn: Turn, n: int, model: str, usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": _chat_message(turn, n),
                "finish_reason": "tool_calls" if isinstance(turn, ToolCall) else "stop",
            }
        ],
        "usage": _chat_usage(usage),
    }


def chat_events(turn: Turn, n: int, model: str, usage: tuple[int, int], include_usage: bool) -> list[Event]:
    head = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> Event:
        return (None, {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    events = [chunk({"role": "assistant", "content": ""})]
    if isinstance(turn, ToolCall):
        arguments = json.dumps(turn.arguments)
        first = {"index": 0, "id": f"call_{n}", "type": "function", "function": {"name": turn.name, "arguments": ""}}
        events.append(chunk({"tool_calls": [first]}))
        for piece in _pieces(arguments):
            events.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
        events.append(chunk({}, "tool_calls"))
    else:
        for piece in _pieces(turn.text):
            events.append(chunk({"content": piece}))
        events.append(chunk({}, "stop"))
    if include_usage:
        events.append((None, {**head, "choices": [], "usage": _chat_usage(usage)}))
    events.append((None, "[DONE]"))
    return events

