"""How the `codex` preset runs the Codex CLI headless: its own home, config, argv and answer.

Codex reads its configuration and credentials from `CODEX_HOME` (default `~/.codex`) and, unless
the project is trusted, ignores a workspace's `.codex/config.toml`. A user's own home would bring
every MCP server of the user's config, so each workspace gets a private `CODEX_HOME` whose
`config.toml` names only the benchmark's MCP server, with the user's `auth.json` linked in (when
the run has no metering proxy; through the proxy, a placeholder key is enough). What it sets:

* `default_tools_approval_mode = "approve"` on the benchmark's server: `codex exec` runs with
  the approval policy `never`, under which every MCP call that needs approval is refused
  ("MCP tool call requires approval, but approval policy is never");
* `web_search = "disabled"` (the key Codex reads; `tools.web_search = false` leaves it on);
* `sandbox_mode = "workspace-write"`: the workspace, where the rules say to keep notes, is
  writable (`read-only` contradicts that); network stays off for commands; `TMPDIR` points into
  the workspace so that Codex can set up that sandbox (see `environment`). Under the run's
  bubblewrap sandbox the preset asks for `danger-full-access`: Codex's own sandbox cannot start
  there, and the outer one confines its commands;
* the model endpoint: a `marathon` model provider speaking the Responses API at the run's
  metering proxy (`ctx.model_base_urls["openai"]`) or, without one, at the user's
  `OPENAI_BASE_URL`; with neither, Codex's own default provider and login;
* the user's `model` (and reasoning effort) from their config, so the preset runs the model they
  chose.

`codex exec --json` prints one JSON event per line (thread.started, turn.started,
item.started/item.completed with `agent_message`, `mcp_tool_call`, `command_execution`,
`error` items, turn.completed with `usage`, turn.failed / error with a message); `read_events`
turns that into the final answer, counts and the CLI's own failure message.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_marathon.agents.cli_answer import CliAnswer, json_events

SERVER = "marathon"
PROVIDER = "marathon"
AUTH_FILE = "auth.json"
#: Features that would add tools or servers besides the benchmark's (connectors, browsers,
#: image generation, memories); off so that the only door stays the benchmark's MCP server.
FEATURES_OFF = ("apps", "plugins", "browser_use", "computer_use", "in_app_browser", "image_generation", "memories")
#: Settings carried over from the user's own config so the preset runs the model they chose.
USER_KEYS = ("model", "model_reasoning_effort")


def user_codex_home(env: Mapping[str, str] | None = None) -> Path:
    """The user's Codex home: `CODEX_HOME` when set, else `~/.codex`."""
    env = os.environ if env is None else env
    return Path(env["CODEX_HOME"]).expanduser() if env.get("CODEX_HOME") else Path.home() / ".codex"


def _toml(value: Any) -> str:
    """A TOML value for the few types written here (JSON strings are valid TOML basic strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))


def _user_settings(home: Path) -> dict[str, Any]:
    try:
        config = tomllib.loads((home / "config.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return {k: config[k] for k in USER_KEYS if isinstance(config.get(k), str | int | float)}


def config_toml(
    mcp_url: str, base_url: str | None, env_key: str | None, settings: Mapping[str, Any],
    sandbox_mode: str = "workspace-write",
) -> str:
    """The private home's config.toml (root keys first, then tables, as TOML requires).
    `sandbox_mode` may be relaxed to `danger-full-access` when an outer sandbox confines the
    process already (Codex's own bubblewrap sandbox may not nest inside another)."""
    root: dict[str, Any] = {
        **settings,
        "approval_policy": "never",
        "sandbox_mode": sandbox_mode,
        "web_search": "disabled",
        "check_for_update_on_startup": False,
    }
    if base_url:
        root["model_provider"] = PROVIDER
    lines = ["# Written by pytest-marathon for one workspace: only the benchmark's MCP server."]
    lines += [f"{key} = {_toml(value)}" for key, value in root.items()]
    lines += ["", "[features]"] + [f"{name} = false" for name in FEATURES_OFF]
    lines += ["", "[analytics]", "enabled = false"]
    if base_url:
        lines += ["", f"[model_providers.{PROVIDER}]", f"name = {_toml('pytest-marathon')}"]
        lines += [f"base_url = {_toml(base_url)}", f"wire_api = {_toml('responses')}"]
        lines += [f"env_key = {_toml(env_key)}"] if env_key else ["requires_openai_auth = true"]
    lines += ["", f"[mcp_servers.{SERVER}]", f"url = {_toml(mcp_url)}"]
    lines += [f"default_tools_approval_mode = {_toml('approve')}", ""]
    return "\n".join(lines)


def prepare_home(
    home: Path, mcp_url: str, model_base_urls: Mapping[str, str], env: Mapping[str, str],
    sandbox_mode: str = "workspace-write",
) -> None:
    """Write the private `CODEX_HOME`; link the user's credentials when no proxy stands between."""
    home.mkdir(parents=True, exist_ok=True)
    user_home = user_codex_home(env)
    proxied = model_base_urls.get("openai")
    base_url = proxied or env.get("OPENAI_BASE_URL") or None
    env_key = "OPENAI_API_KEY" if (proxied or env.get("OPENAI_API_KEY")) else None
    (home / "config.toml").write_text(
        config_toml(mcp_url, base_url, env_key, _user_settings(user_home), sandbox_mode), encoding="utf-8"
    )
    link = home / AUTH_FILE
    if link.is_symlink() or link.exists():
        link.unlink()
    source = user_home / AUTH_FILE
    if not proxied and source.exists():
        link.symlink_to(source)


def environment(home: Path, tmp: Path) -> dict[str, str]:
    """`CODEX_HOME`, and a `TMPDIR` outside it: Codex refuses to create the helper it runs
    sandboxed commands with (`codex-linux-sandbox`) when its home lies under the temporary
    directory, as a workspace in /tmp does, and every shell command then fails."""
    tmp.mkdir(parents=True, exist_ok=True)
    return {"CODEX_HOME": str(home), "TMPDIR": str(tmp)}


def argv(executable: str, prompt: str, workspace: Path, last_message: Path) -> list[str]:
    return [
        executable,
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--cd",
        str(workspace),
        "--output-last-message",
        str(last_message),
        prompt,
    ]


@dataclass
class _Run:
    thread: str = ""
    answer: str = ""
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: int = 0
    tool_failures: list[str] = field(default_factory=list)
    failure: str = ""


TOOL_ITEMS = {"mcp_tool_call", "command_execution", "file_change", "web_search", "collab_tool_call"}


def requests_in_rollout(home: Path, thread: str) -> int | None:
    """Model responses of one thread, from the session rollout Codex writes in its home
    (`sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`): one `token_count` event with usage
    per response. None when the file is not there (then the JSON stream's estimate stands)."""
    if not thread:
        return None
    found = sorted(home.glob(f"sessions/*/*/*/rollout-*-{thread}.jsonl"))
    if not found:
        return None
    count = 0
    for line in found[-1].read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        payload = event.get("payload") if isinstance(event, Mapping) else None
        if isinstance(payload, Mapping) and payload.get("type") == "token_count" and payload.get("info"):
            count += 1
    return count


def read_events(text: str, home: Path | None = None) -> CliAnswer:
    """The answer of one `codex exec --json` run.

    `model_calls` is the number of model responses the session rollout in `home` records; the
    JSON stream has no event per request, so without the rollout it is estimated as one request
    per tool item Codex reports plus one per turn (a lower bound: code-mode `exec` calls that
    call no MCP tool are not reported). A run whose every MCP tool call failed (refused, unknown
    tool, server down) is a failure although Codex exits 0: its first tool error is the message."""
    run = _Run()
    for event in json_events(text):
        kind = event.get("type")
        item = event.get("item") if isinstance(event.get("item"), Mapping) else {}
        if kind == "thread.started":
            run.thread = str(event.get("thread_id") or "")
        elif kind == "item.completed" and item.get("type") == "agent_message":
            run.answer = str(item.get("text") or "")
        elif kind == "item.completed" and item.get("type") in TOOL_ITEMS:
            run.requests += 1
            if item.get("type") == "mcp_tool_call" and item.get("server") == SERVER:
                run.tool_calls += 1
                error = item.get("error")
                if error:
                    message = error.get("message") if isinstance(error, Mapping) else error
                    run.tool_failures.append(f"{item.get('tool')}: {message}")
        elif kind == "turn.completed":
            run.requests += 1
            usage = event.get("usage") if isinstance(event.get("usage"), Mapping) else {}
            run.input_tokens += int(usage.get("input_tokens") or 0)
            run.output_tokens += int(usage.get("output_tokens") or 0)
        elif kind == "turn.failed":
            error = event.get("error") if isinstance(event.get("error"), Mapping) else {}
            run.failure = str(error.get("message") or "turn failed")
        elif kind == "error":  # a stream-level error (item-level `error` items are warnings)
            run.failure = str(event.get("message") or "error")
    failure = run.failure
    if not failure and run.tool_calls and len(run.tool_failures) == run.tool_calls:
        failure = f"all {run.tool_calls} MCP tool calls failed, the first: {run.tool_failures[0]}"
    counted = requests_in_rollout(home, run.thread) if home is not None else None
    requests = counted if counted else run.requests
    return CliAnswer(
        run.answer, requests, run.input_tokens, run.output_tokens, 0.0, failure, run.tool_calls
    )
