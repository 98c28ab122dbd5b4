"""One wire format's request, read into what a script needs: the tools offered and the calls made.

Each API spells tools, tool calls and tool results its own way; the script should not care, so
every request is normalised here into a `Conversation`:

* OpenAI Responses (`POST /v1/responses`): `tools` items `{"type": "function", "name", ...}` or
  free-form `{"type": "custom", "name", "format"}`, grouped as `{"type": "namespace", "name",
  "tools": [...]}` (Codex 0.171 also declares tools in an `additional_tools` input item); `input`
  items `function_call` (`name`, `arguments`, `call_id`) / `custom_tool_call` (`name`, `input`,
  `call_id`) and `function_call_output` / `custom_tool_call_output` (`call_id`, `output`: a
  string or a list of content parts).
  https://platform.openai.com/docs/api-reference/responses/create
* OpenAI Chat Completions (`POST /v1/chat/completions`): `tools` items
  `{"type": "function", "function": {"name", ...}}`; assistant messages carry `tool_calls`
  (`id`, `function.name`, `function.arguments`), results are `{"role": "tool", "tool_call_id",
  "content"}`. https://platform.openai.com/docs/api-reference/chat/create
* Anthropic Messages (`POST /v1/messages`): `tools` items `{"name", "input_schema", ...}`;
  assistant `tool_use` blocks (`id`, `name`, `input`), user `tool_result` blocks (`tool_use_id`,
  `content`: a string or text blocks, `is_error`).
  https://platform.claude.com/docs/agents-and-tools/tool-use/overview
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolResult:
    """One tool call of the conversation and what came back (`result` None: not answered yet)."""

    name: str
    arguments: Mapping[str, Any]
    call_id: str
    result: str | None = None
    is_error: bool = False


@dataclass
class Conversation:
    """The parts of a request a script decides on."""

    api: str  # "responses" | "chat" | "messages"
    model: str
    tools: dict[str, str] = field(default_factory=dict)  # tool name -> namespace ("" if none)
    custom_tools: set[str] = field(default_factory=set)  # free-form tools (input is raw text)
    calls: list[ToolResult] = field(default_factory=list)
    system: str = ""
    user_texts: list[str] = field(default_factory=list)

    def tool_named(self, short: str) -> str | None:
        """The offered tool whose name is `short` or ends in a separator + `short`.

        CLIs qualify MCP tools with their server (Claude Code `mcp__marathon__get_alerts`,
        Codex `mcp__marathon__get_alerts` or a namespace), so a script asks by the short name."""
        for name in self.tools:
            if name == short or name.endswith(("__" + short, "." + short, "/" + short)):
                return name
        return None

    def calls_of(self, short: str) -> list[ToolResult]:
        full = self.tool_named(short)
        return [
            c for c in self.calls
            if c.name in {short, full} or c.name.endswith(("__" + short, "." + short))
        ]


def _text_of(content: Any) -> str:
    """Text of a content value: a string, or a list of parts with `text` (any part type)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        return str(content.get("text") or "")
    if isinstance(content, Iterable):
        return "\n".join(_text_of(part) for part in content)
    return str(content)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = json.loads(raw or "{}")
    except (TypeError, json.JSONDecodeError):
        return {"_unparsed": raw}
    return value if isinstance(value, dict) else {"_value": value}


def _answer(calls: list[ToolResult], call_id: str, text: str, is_error: bool = False) -> None:
    for i, call in enumerate(calls):
        if call.call_id == call_id:
            calls[i] = ToolResult(call.name, call.arguments, call_id, text, is_error)
            return


def from_responses(body: Mapping[str, Any]) -> Conversation:
    conv = Conversation("responses", str(body.get("model") or ""), system=str(body.get("instructions") or ""))

    def add_tools(items: Iterable[Any], namespace: str = "") -> None:
        for tool in items:
            if not isinstance(tool, Mapping):
                continue
            if tool.get("type") == "namespace" and isinstance(tool.get("tools"), list):
                add_tools(tool["tools"], str(tool.get("name") or ""))
            elif tool.get("name"):
                conv.tools[str(tool["name"])] = namespace
                if tool.get("type") == "custom":
                    conv.custom_tools.add(str(tool["name"]))

    add_tools(body.get("tools") or [])
    items = body.get("input")
    if isinstance(items, str):
        conv.user_texts.append(items)
        return conv
    for item in items or []:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type") or ("message" if "role" in item else "")
        if kind == "additional_tools":  # Codex declares (code-mode) tools in the input as well
            add_tools(item.get("tools") or [])
        elif kind == "message":
            if item.get("role") == "user":
                conv.user_texts.append(_text_of(item.get("content")))
            elif item.get("role") in {"system", "developer"}:
                conv.system += "\n" + _text_of(item.get("content"))
        elif kind in {"function_call", "custom_tool_call"}:
            name = str(item.get("name") or "")
            if kind == "custom_tool_call":
                arguments: dict[str, Any] = {"input": str(item.get("input") or "")}
            else:
                arguments = _arguments(item.get("arguments"))
            conv.calls.append(ToolResult(name, arguments, str(item.get("call_id") or "")))
        elif kind in {"function_call_output", "custom_tool_call_output"}:
            output = item.get("output")
            _answer(conv.calls, str(item.get("call_id") or ""), _text_of(output))
    return conv


def from_chat(body: Mapping[str, Any]) -> Conversation:
    conv = Conversation("chat", str(body.get("model") or ""))
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and function.get("name"):
            conv.tools[str(function["name"])] = ""
    for message in body.get("messages") or []:
        role = message.get("role")
        if role in {"system", "developer"}:
            conv.system += "\n" + _text_of(message.get("content"))
        elif role == "user":
            conv.user_texts.append(_text_of(message.get("content")))
        elif role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                conv.calls.append(
                    ToolResult(str(function.get("name") or ""), _arguments(function.get("arguments")), str(call.get("id") or ""))
                )
        elif role == "tool":
            _answer(conv.calls, str(message.get("tool_call_id") or ""), _text_of(message.get("content")))
    return conv


def from_messages(body: Mapping[str, Any]) -> Conversation:
    conv = Conversation("messages", str(body.get("model") or ""), system=_text_of(body.get("system")))
    for tool in body.get("tools") or []:
        if isinstance(tool, Mapping) and tool.get("name"):
            conv.tools[str(tool["name"])] = ""
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            kind = block.get("type")
            if kind == "tool_use":
                conv.calls.append(ToolResult(str(block.get("name")), _arguments(block.get("input")), str(block.get("id"))))
            elif kind == "tool_result":
                _answer(conv.calls, str(block.get("tool_use_id")), _text_of(block.get("content")), bool(block.get("is_error")))
            elif kind == "text" and message.get("role") == "user":
                conv.user_texts.append(str(block.get("text") or ""))
    return conv
