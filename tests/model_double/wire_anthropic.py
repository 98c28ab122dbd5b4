"""A turn in the Anthropic Messages wire format, streamed and not.

Streaming follows https://platform.claude.com/docs/build-with-claude/streaming: `message_start`
(a Message with empty `content` and `usage.input_tokens`), per content block
`content_block_start` / `content_block_delta` (`text_delta` or, for `tool_use`,
`input_json_delta` with `partial_json` pieces) / `content_block_stop`, a `ping`, then
`message_delta` (`delta.stop_reason`, cumulative `usage.output_tokens`) and `message_stop`. Each
event is `event: <type>` plus `data: <json>` whose `type` repeats the name.
`POST /v1/messages/count_tokens` answers `{"input_tokens": N}`
(https://platform.claude.com/docs/build-with-claude/token-counting).
"""

from __future__ import annotations

import json
from typing import Any

from .script import ToolCall, Turn

Event = tuple[str | None, Any]


def _block(turn: Turn, n: int) -> dict[str, Any]:
    if isinstance(turn, ToolCall):
        return {"type": "tool_use", "id": f"toolu_{n:04d}", "name": turn.name, "input": dict(turn.arguments)}
    return {"type": "text", "text": turn.text}


def _usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _stop_reason(turn: Turn) -> str:
    return "tool_use" if isinstance(turn, ToolCall) else "end_turn"


def message_json(turn: Turn, n: int, model: str, usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": f"msg_{n:04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [_block(turn, n)],
        "stop_reason": _stop_reason(turn),
        "stop_sequence": None,
        "usage": _usage(*usage),
    }


def message_events(turn: Turn, n: int, model: str, usage: tuple[int, int]) -> list[Event]:
    start = {**message_json(turn, n, model, (usage[0], 1)), "content": [], "stop_reason": None}
    block = _block(turn, n)
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    if isinstance(turn, ToolCall):
        events.append({"type": "content_block_start", "index": 0, "content_block": {**block, "input": {}}})
        events.append({"type": "ping"})
        arguments = json.dumps(block["input"])
        for i in range(0, len(arguments), 24):
            delta = {"type": "input_json_delta", "partial_json": arguments[i : i + 24]}
            events.append({"type": "content_block_delta", "index": 0, "delta": delta})
    else:
        events.append({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        events.append({"type": "ping"})
        for i in range(0, max(len(turn.text), 1), 24):
            delta = {"type": "text_delta", "text": turn.text[i : i + 24]}
            events.append({"type": "content_block_delta", "index": 0, "delta": delta})
    events.append({"type": "content_block_stop", "index": 0})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(turn), "stop_sequence": None},
            "usage": {"output_tokens": usage[1]},
        }
    )
    events.append({"type": "message_stop"})
    return [(e["type"], e) for e in events]
