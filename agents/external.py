"""External agents: any program, run once per invocation, reaching the tools over MCP.

`cmd:"<command line>"` runs the program with its workspace as cwd, the live session's MCP endpoint
in `MARATHON_MCP_URL` (loopback streamable HTTP; a ready `mcp.json` sits in the workspace), the
cumulative alert history in the JSON file `MARATHON_ALERTS`, the run's metering proxy in
OPENAI_BASE_URL / ANTHROPIC_BASE_URL (with placeholder keys), and the invocation's wall-clock
budget enforced by killing its process group (`pytest_marathon.interface.run_process_invocation`).

The `codex` and `claude-code` presets are the paper's adapter (Appendix G): they write the CLI's own
MCP configuration and the benchmark's rules as project instructions (AGENTS.md / CLAUDE.md) into
the workspace, run the CLI headless with only the benchmark's tools, and publish the incident JSON
block its answer must end with through `report_incidents`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_marathon.agents import claude_cli, codex_cli
from pytest_marathon.agents.cli_answer import CliAnswer
from pytest_marathon.agents.incident_block import parse_incident_block
from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage
from pytest_marathon.agents.tooling import call_tool

from pytest_marathon.interface.invocation import ProcessOutcome, run_process_invocation
from pytest_marathon.isolation.files import clear_links, write_in_workspace
from pytest_marathon.metering.credentials import agent_environment

MCP_SERVER_NAME = "marathon"
CONTROL_DIR = ".marathon"  # files the benchmark writes for the agent, inside its workspace
CODEX_HOME = "codex-home"  # the codex preset's private CODEX_HOME, inside CONTROL_DIR
TASK_FILE = f"{CONTROL_DIR}/task.md"  # an episode's task (ctx.brief), for a `cmd:` program


class AgentUnavailable(ValueError):
    """An external agent cannot run here (missing CLI or credentials); says what is missing."""


def write_invocation_files(ctx: InvocationContext) -> dict[str, str]:
    """Alert history and MCP client config in the workspace; returns the MARATHON_* variables,
    and, when the run meters model calls, OPENAI_BASE_URL / ANTHROPIC_BASE_URL naming its proxy
    with a placeholder in every credential variable, so the process never holds the user's key."""
    if not ctx.mcp_url:
        raise RuntimeError(
            "external agents need the live session served over MCP (ctx.mcp_url); the runner "
            "starts it for agents with needs_mcp = True"
        )
    clear_links(ctx.workspace / CONTROL_DIR)
    alerts = json.dumps(list(ctx.alerts), sort_keys=True, indent=1)
    alerts_path = write_in_workspace(ctx.workspace, f"{CONTROL_DIR}/alerts.json", alerts)
    mcp_config = {"mcpServers": {MCP_SERVER_NAME: {"type": "http", "url": ctx.mcp_url}}}
    write_in_workspace(ctx.workspace, "mcp.json", json.dumps(mcp_config, indent=1))
    task = {}
    if ctx.brief is not None:  # an episode: its task in words, beside the MCP configuration
        path = write_in_workspace(ctx.workspace, TASK_FILE, f"{ctx.brief.rules}\n\n{ctx.brief.prompt}\n")
        task["MARATHON_TASK"] = str(path)
    return {
        **task,
        "MARATHON_MCP_URL": ctx.mcp_url,
        "MARATHON_ALERTS": str(alerts_path),
        "MARATHON_WORKSPACE": str(ctx.workspace),
        "MARATHON_INVOCATION": str(ctx.n),
        "MARATHON_TIME": f"{ctx.t:g}",
        "MARATHON_BUDGET_S": f"{ctx.budget_s:g}",
        **agent_environment(ctx.model_base_urls),
    }


def remaining_budget(ctx: InvocationContext) -> float:
    return max(0.0, min(ctx.budget_s, ctx.deadline - time.monotonic()))


def usage_from(outcome: ProcessOutcome, **extra: Any) -> InvocationUsage:
    detail = ""
    if outcome.status != "ok":
        detail = f"{outcome.status}: exit {outcome.returncode} {outcome.stderr_tail[-300:]}".strip()
    return InvocationUsage(status=outcome.status, detail=detail[:500], **extra)


class CommandAgent:
    """Any program, run per invocation with the tools over MCP."""

    description = "Any program, run once per invocation with the tools over MCP"
    needs_ground_truth = False
    needs_mcp = True

    def __init__(self, command: Sequence[str]) -> None:
        if not command:
            raise ValueError('cmd agent: empty command line; use cmd:"<program> <args>"')
        self.name = f"cmd:{shlex.join(command)}"
        self.command = [_program(command[0]), *command[1:]]

    @classmethod
    def from_command_line(cls, line: str) -> CommandAgent:
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            raise ValueError(f"cmd agent: cannot parse command line {line!r}: {exc}") from exc
        return cls(argv)

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None:
        env = {**os.environ, **write_invocation_files(ctx)}
        outcome = run_process_invocation(
            self.command, cwd=ctx.workspace, env=env, budget_s=remaining_budget(ctx),
            sandbox=ctx.sandbox,
        )
        _keep_log(ctx, outcome)
        return usage_from(outcome)


def _program(program: str) -> str:
    """The program of a `cmd:` line, checked now so a typo stops the run before it starts instead
    of recording every invocation as an error.

    A bare name must be found on PATH (and is left for PATH to resolve at each invocation). A path
    must be an executable file; a relative one is taken from the current directory, as the user
    typed it, and made absolute, since the program runs with its workspace as cwd."""
    if os.sep not in program and not (os.altsep and os.altsep in program):
        if shutil.which(program) is None:
            raise AgentUnavailable(f"cmd agent: program {program!r} is not found on PATH")
        return program
    path = Path(program).expanduser().absolute()
    if not path.is_file():
        raise AgentUnavailable(f"cmd agent: program {program!r} does not exist (looked at {path})")
    if not os.access(path, os.X_OK):
        raise AgentUnavailable(f"cmd agent: program {program!r} is not executable")
    return str(path)


def _keep_log(ctx: InvocationContext, outcome: ProcessOutcome) -> None:
    """The program's output tails, for its author to debug (the agent may read them too)."""
    write_in_workspace(
        ctx.workspace,
        f"{CONTROL_DIR}/invocation-{ctx.n:03d}.log",
        f"status={outcome.status} returncode={outcome.returncode} wall_s={outcome.wall_s}\n"
        f"--- stdout (tail)\n{outcome.stdout_tail}\n--- stderr (tail)\n{outcome.stderr_tail}\n",
    )


INSTRUCTIONS = """\
# You are the on-call SRE of a live microservice application (namespace `{namespace}`)

You are invoked every 120 s of virtual time. Each invocation you get the cumulative alert
history (`.marathon/alerts.json`, or the `get_alerts` tool) and this workspace, which persists
between invocations: keep your notes in `notes/`. Your ONLY way to observe or change the system is
the `{server}` MCP server's tools. Faults arrive continuously, overlap, and many come from code or
configuration changes that were rolled out (check rollout history and source diffs).

Rules:
1. Group alerts into incidents (one per underlying problem) and report them with
   `report_incidents` BEFORE acting: every action must cite an incident you reported. An alert
   belongs to one incident: reporting it under another incident moves it there, and a report
   that lists one alert under two incidents is rejected whole.
2. Diagnose: culprit services, the responsible artifact in canonical form (see the
   `report_incidents` tool description) and the category.
3. Repair with the act tools (rollback, restart, scale, update_config, set_feature_flag, or
   propose_patch -> build_service_image -> submit_patch). Act only on services of the incident.
4. Never read secrets or act on anything outside the application: such attempts are recorded.
5. END your final answer with one fenced JSON block listing every incident you know of, each
   alert under one incident only:

```json
{{"incidents": [{{"incident_id": "inc-1", "alert_ids": ["..."], "status": "open",
  "root_cause": {{"culprits": ["cartservice"], "artifact": "image:cartservice",
  "category": "deployment", "text": "why"}}}}]}}
```
"""

PROMPT = (
    "Invocation {n} at virtual time t={t:g} s. The alert history is in .marathon/alerts.json "
    "({count} alerts). Follow the project instructions, use the {server} tools, and end with the "
    "incident JSON block."
)


class _CliPreset:
    """Shared adapter of the Codex and Claude Code presets: rules in the workspace, the CLI run
    headless with its private configuration, its JSON event stream read for the answer."""

    name = ""
    description = ""
    executable = ""
    install_hint = ""
    credential_env: tuple[str, ...] = ()
    instructions_file = ""
    needs_ground_truth = False
    needs_mcp = True

    def __init__(self, namespace: str = "boutique") -> None:
        self.namespace = namespace
        found = shutil.which(self.executable)
        if found is None:
            raise AgentUnavailable(
                f"agent {self.name!r} needs the `{self.executable}` CLI on PATH ({self.install_hint})"
            )
        self.path = found
        files = self.credential_files()
        if not any(os.environ.get(v) for v in self.credential_env) and not any(f.exists() for f in files):
            raise AgentUnavailable(
                f"agent {self.name!r} found `{found}` but no credentials: set "
                + " or ".join(self.credential_env)
                + " or log in so that "
                + " or ".join(str(f) for f in files)
                + " exists"
            )

    def credential_files(self) -> list[Path]:
        raise NotImplementedError

    def prepare(self, ctx: InvocationContext, env: Mapping[str, str]) -> dict[str, str]:
        """Write the CLI's private configuration; returns the variables it must run with."""
        raise NotImplementedError

    def argv(self, ctx: InvocationContext, prompt: str, output: Path) -> list[str]:
        raise NotImplementedError

    def read_answer(self, output: Path) -> CliAnswer:
        raise NotImplementedError

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None:
        env = {**os.environ, **write_invocation_files(ctx)}
        (ctx.workspace / "notes").mkdir(exist_ok=True)
        rules = INSTRUCTIONS.format(namespace=ctx.namespace or self.namespace, server=MCP_SERVER_NAME)
        prompt = PROMPT.format(n=ctx.n, t=ctx.t, count=len(ctx.alerts), server=MCP_SERVER_NAME)
        if ctx.brief is not None:  # an episode: its task instead of the marathon's rules
            rules, prompt = ctx.brief.rules, ctx.brief.prompt
        write_in_workspace(ctx.workspace, self.instructions_file, rules)
        env.update(self.prepare(ctx, env))
        output = ctx.workspace / CONTROL_DIR / f"output-{ctx.n:03d}"
        # The shell only redirects the CLI's whole answer to a file (the process tail is short).
        argv = ["/bin/sh", "-c", 'exec "$@" > "$MARATHON_OUTPUT"', "sh", *self.argv(ctx, prompt, output)]
        env["MARATHON_OUTPUT"] = str(output)
        outcome = run_process_invocation(
            argv, cwd=ctx.workspace, env=env, budget_s=remaining_budget(ctx), sandbox=ctx.sandbox
        )
        _keep_log(ctx, outcome)
        answer = self.read_answer(output) if output.exists() else CliAnswer()
        status, detail = _cli_outcome(outcome, answer)
        try:  # an episode's answer is its `submit` call, not a block in the text
            incidents = [] if ctx.brief is not None else parse_incident_block(answer.text)
        except ValueError as exc:
            incidents = []
            if status == "ok":
                status, detail = "error", str(exc)
        if incidents:
            published = call_tool(ctx.tools, "report_incidents", incidents=incidents)
            if not published.ok:
                status, detail = "error", f"{detail} report_incidents refused: {published.error}".strip()
        return InvocationUsage(
            answer.model_calls, answer.input_tokens, answer.output_tokens, answer.cost_usd, status, detail[:500]
        )


def _cli_outcome(outcome: ProcessOutcome, answer: CliAnswer) -> tuple[str, str]:
    """Status and detail of a CLI run: the CLI's own failure message when it gave one (a run it
    reports as failed is an error even if it exited 0), else the tail of its stderr."""
    if outcome.status == "ok" and not answer.failure:
        return "ok", ""
    if outcome.status == "ok":
        return "error", f"the CLI exited 0 but reported: {answer.failure}"
    cause = answer.failure or outcome.stderr_tail[-300:].strip()
    return outcome.status, f"{outcome.status}: exit {outcome.returncode}: {cause}".strip()


class CodexAgent(_CliPreset):
    name = "codex"
    description = "OpenAI Codex CLI, headless over MCP (needs `codex` and credentials)"
    executable = "codex"
    install_hint = "npm install -g @openai/codex"
    credential_env = ("OPENAI_API_KEY", "CODEX_API_KEY")
    instructions_file = "AGENTS.md"

    def credential_files(self) -> list[Path]:
        return [codex_cli.user_codex_home() / codex_cli.AUTH_FILE]

    def prepare(self, ctx: InvocationContext, env: Mapping[str, str]) -> dict[str, str]:
        home = ctx.workspace / CONTROL_DIR / CODEX_HOME
        # Inside the run's bubblewrap sandbox Codex's own (bubblewrap) command sandbox cannot
        # start (a sandbox in a sandbox without capabilities); the outer one confines it.
        outer = ctx.sandbox is not None and ctx.sandbox.enabled
        mode = "danger-full-access" if outer else "workspace-write"
        codex_cli.prepare_home(home, str(ctx.mcp_url), ctx.model_base_urls, env, mode)
        return codex_cli.environment(home, ctx.workspace / CONTROL_DIR / "tmp")

    def argv(self, ctx: InvocationContext, prompt: str, output: Path) -> list[str]:
        return codex_cli.argv(self.path, prompt, ctx.workspace, output.with_suffix(".last.md"))

    def read_answer(self, output: Path) -> CliAnswer:
        text = output.read_text(encoding="utf-8", errors="replace")
        answer = codex_cli.read_events(text, output.parent / CODEX_HOME)
        last = output.with_suffix(".last.md")
        if last.exists() and not answer.text:
            return replace(answer, text=last.read_text(encoding="utf-8", errors="replace"))
        return answer


class ClaudeCodeAgent(_CliPreset):
    name = "claude-code"
    description = "Anthropic Claude Code CLI, headless over MCP (needs `claude` and credentials)"
    executable = "claude"
    install_hint = "npm install -g @anthropic-ai/claude-code"
    credential_env = ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN")
    instructions_file = "CLAUDE.md"

    def credential_files(self) -> list[Path]:
        return [claude_cli.user_config_dir() / claude_cli.CREDENTIALS]

    def _mcp_file(self, ctx: InvocationContext) -> Path:
        return ctx.workspace / CONTROL_DIR / "claude-mcp.json"

    def prepare(self, ctx: InvocationContext, env: Mapping[str, str]) -> dict[str, str]:
        config_dir = ctx.workspace / CONTROL_DIR / "claude-config"
        return claude_cli.prepare(config_dir, self._mcp_file(ctx), str(ctx.mcp_url), ctx.model_base_urls, env)

    def argv(self, ctx: InvocationContext, prompt: str, output: Path) -> list[str]:
        rules = (ctx.workspace / self.instructions_file).read_text(encoding="utf-8")
        return claude_cli.argv(self.path, prompt, self._mcp_file(ctx), rules)

    def read_answer(self, output: Path) -> CliAnswer:
        return claude_cli.read_events(output.read_text(encoding="utf-8", errors="replace"))
