"""How the `claude-code` preset runs Claude Code headless: its own config dir, argv and answer.

Claude Code keeps settings, MCP approvals and credentials in `CLAUDE_CONFIG_DIR` (default
`~/.claude`). Each workspace gets a private one, with the user's `.credentials.json` linked in
when no metering proxy stands between (through the proxy a placeholder key is enough), so the
user's own MCP servers, hooks and settings stay out. What the preset sets:

* only the benchmark's MCP server: `--mcp-config <file> --strict-mcp-config`;
* settings from the private config dir only (`--setting-sources user`): the workspace is the
  agent's to write, and project settings there (`.claude/settings.json`: permissions, hooks)
  would otherwise apply to the next invocation; that also leaves the workspace's CLAUDE.md
  unread (project memory is a project source), so the rules go in with `--append-system-prompt`;
* headless permissions: `--allowedTools` the benchmark's tools (`mcp__marathon`) and the file
  tools the agent needs for its notes; `--disallowedTools` web and shell tools
  (WebFetch, WebSearch, Bash);
* the model endpoint: `ANTHROPIC_BASE_URL` = the run's metering proxy
  (`ctx.model_base_urls["anthropic"]`) when it runs, else the user's environment as it is;
* no nonessential traffic (`CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`, no autoupdater, no
  telemetry or error reporting).

`claude -p --output-format stream-json --verbose` prints one JSON message per line: `system`
(`init` lists the MCP servers and their status), `assistant` (one per model response, with its
`message.id` and `usage`), `user` (tool results) and a last `result` (`subtype`, `is_error`,
`result`, `num_turns`, `total_cost_usd`, `usage`, `errors`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_marathon.agents.cli_answer import CliAnswer, json_events

SERVER = "marathon"
CREDENTIALS = ".credentials.json"
ALLOWED = (f"mcp__{SERVER}", "Read", "Write", "Edit", "Glob", "Grep", "WaitForMcpServers")
DISALLOWED = ("Bash", "WebFetch", "WebSearch")
QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}
MAX_TURNS = 40


def user_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user's Claude Code config dir: `CLAUDE_CONFIG_DIR` when set, else `~/.claude`."""
    env = os.environ if env is None else env
    value = env.get("CLAUDE_CONFIG_DIR")
    return Path(value).expanduser() if value else Path.home() / ".claude"


def prepare(
    config_dir: Path, mcp_file: Path, mcp_url: str, model_base_urls: Mapping[str, str],
    env: Mapping[str, str],
) -> dict[str, str]:
    """Write the private config dir and the MCP config; returns the variables the CLI needs."""
    config_dir.mkdir(parents=True, exist_ok=True)
    mcp_file.write_text(
        json.dumps({"mcpServers": {SERVER: {"type": "http", "url": mcp_url}}}, indent=1), encoding="utf-8"
    )
    link = config_dir / CREDENTIALS
    if link.is_symlink() or link.exists():
        link.unlink()
    source = user_config_dir(env) / CREDENTIALS
    proxied = model_base_urls.get("anthropic")
    if not proxied and source.exists():
        link.symlink_to(source)
    variables = {"CLAUDE_CONFIG_DIR": str(config_dir), **QUIET}
    if proxied:
        variables["ANTHROPIC_BASE_URL"] = proxied
    return variables


def argv(executable: str, prompt: str, mcp_file: Path, instructions: str) -> list[str]:
    return [
        executable,
        "-p",
        prompt,
        # `--setting-sources user` keeps the workspace's CLAUDE.md out of the context (project
        # memory is a project source), so the rules travel in the system prompt
        "--append-system-prompt",
        instructions,
        "--output-format",
        "stream-json",
        "--verbose",
        "--mcp-config",
        str(mcp_file),
        "--strict-mcp-config",
        "--setting-sources",
        "user",
        "--allowedTools",
        *ALLOWED,
        "--disallowedTools",
        *DISALLOWED,
        "--max-turns",
        str(MAX_TURNS),
    ]


def _failure(result: Mapping[str, Any], servers: Mapping[str, str]) -> str:
    if not result:
        down = [f"{name} {status}" for name, status in servers.items() if status not in {"connected", "pending"}]
        return "no result message" + (f" (MCP: {', '.join(down)})" if down else "")
    if not result.get("is_error") and result.get("subtype") == "success":
        return ""
    errors = result.get("errors")
    reason = "; ".join(str(e) for e in errors) if isinstance(errors, list) and errors else ""
    reason = reason or str(result.get("result") or "")
    subtype = str(result.get("subtype") or "")
    return " ".join(part for part in ("" if subtype == "success" else subtype, reason) if part) or "error"


def read_events(text: str) -> CliAnswer:
    """The answer of one `claude -p --output-format stream-json --verbose` run; `model_calls`
    counts the distinct model responses (assistant messages by id)."""
    result: Mapping[str, Any] = {}
    servers: dict[str, str] = {}
    responses: set[str] = set()
    last_text = ""
    tool_calls = 0
    for event in json_events(text):
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            for server in event.get("mcp_servers") or []:
                if isinstance(server, Mapping):
                    servers[str(server.get("name"))] = str(server.get("status"))
        elif kind == "assistant" and isinstance(event.get("message"), Mapping):
            message = event["message"]
            responses.add(str(message.get("id") or len(responses)))
            for block in message.get("content") or []:
                if not isinstance(block, Mapping):
                    continue
                if block.get("type") == "text":
                    last_text = str(block.get("text") or "")
                elif block.get("type") == "tool_use" and str(block.get("name", "")).startswith(f"mcp__{SERVER}__"):
                    tool_calls += 1
        elif kind == "result":
            result = event
    usage = result.get("usage") if isinstance(result.get("usage"), Mapping) else {}
    return CliAnswer(
        text=str(result.get("result") or last_text) if result else last_text,
        model_calls=len(responses),
        input_tokens=int(usage.get("input_tokens") or 0) + int(usage.get("cache_read_input_tokens") or 0)
        + int(usage.get("cache_creation_input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        cost_usd=float(result.get("total_cost_usd") or 0.0),
        failure=_failure(result, servers),
        tool_calls=tool_calls,
    )
