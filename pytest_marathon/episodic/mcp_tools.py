"""The Agent-Cloud Interface of one episode as MCP tools, for the marathon's external agents
(`cmd:` programs, the codex and claude-code presets).

The tools are the ACI's APIs under their own names (get_logs, get_metrics, get_traces,
read_metrics, read_traces, exec_shell, submit) and each one is carried out by the episode's
`Interface`, so the guard rails (kubectl only, AIOpsLab's block list, the namespace check) are the
in-process ones. What an in-process agent's turn is, a tool call is here: it is one step, recorded
as the turn would be (`tool_calls`, one `invocations` record with the model usage the proxy
measured since the previous call), and the twin moves on STEP_S after it. `submit` ends the
episode; so does the step limit: every later call is refused and not recorded.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent
from mcp_types import Tool as MCPTool

from pytest_marathon.episodic.aci import Call, Interface

SERVER_NAME = "pytest-marathon-episode"
OBSERVATION_RECORDED = 4000  # characters of each observation kept in the bundle (as in-process)
SUBMITTED = "Submitted. The episode is over."

_NAMESPACE = {"type": "string", "description": "the application's namespace"}
_DURATION = {"type": "integer", "description": "minutes to look back (default 5)", "default": 5}
_FILE = {"type": "string", "description": "the path a get_metrics or get_traces answer names"}
#: (name, JSON schema of the arguments); the descriptions come from Interface.documentation.
SCHEMAS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("get_logs", {"type": "object", "properties": {"namespace": _NAMESPACE, "service": {"type": "string"}},
                  "required": ["namespace", "service"]}),
    ("get_metrics", {"type": "object", "properties": {"namespace": _NAMESPACE, "duration": _DURATION},
                     "required": ["namespace"]}),
    ("get_traces", {"type": "object", "properties": {"namespace": _NAMESPACE, "duration": _DURATION},
                    "required": ["namespace"]}),
    ("read_metrics", {"type": "object", "properties": {"file_path": _FILE}, "required": ["file_path"]}),
    ("read_traces", {"type": "object", "properties": {"file_path": _FILE}, "required": ["file_path"]}),
    ("exec_shell", {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
)
#: the submission's shape per task (what evaluate.judge reads)
SUBMIT_SCHEMAS: dict[str, dict[str, Any]] = {
    "detection": {"type": "object", "properties": {"solution": {"type": "string", "enum": ["Yes", "No"]}},
                  "required": ["solution"]},
    "localization": {"type": "object", "properties": {"solution": {"type": "array", "items": {"type": "string"}}},
                     "required": ["solution"]},
    "analysis": {"type": "object", "properties": {"solution": {
        "type": "object", "properties": {"system_level": {"type": "string"}, "fault_type": {"type": "string"}},
        "required": ["system_level", "fault_type"]}}, "required": ["solution"]},
    "mitigation": {"type": "object", "properties": {}},
}


@dataclass(frozen=True)
class ToolAnswer:
    text: str
    is_error: bool


class EpisodeTools:
    """One episode's tool calls: one at a time, counted, recorded, and refused once it is over.

    `advance()` moves the twin on after a step (under the episode's lock); `usage()` closes the
    proxy's current window and opens the next one (model calls between two tool calls belong to
    the second)."""

    def __init__(self, aci: Interface, task: str, recorder: Any, max_steps: int, *,
                 advance: Callable[[], None], now: Callable[[], float],
                 usage: Callable[[int], dict[str, Any]]) -> None:
        self.aci = aci
        self.task = task
        self.recorder = recorder
        self.max_steps = max_steps
        self._advance = advance
        self._now = now
        self._usage = usage
        self._lock = threading.Lock()
        self.steps = 0
        self.over = ""  # why no call is taken any more
        self.trajectory: list[dict[str, Any]] = []
        self._last = time.perf_counter()
        self._last_chars = 0

    def list_tools(self) -> list[MCPTool]:
        docs = dict(line.split(" -> ", 1) if " -> " in line else (line.split(":", 1)[0], line)
                    for line in self.aci.documentation(self.task).splitlines())
        tools = [MCPTool(name=name, description=_describe(name, docs), input_schema=schema)
                 for name, schema in SCHEMAS]
        submit = next(text for head, text in docs.items() if head.startswith("submit"))
        tools.append(MCPTool(name="submit", description=f"{submit}; ends the episode (the answer goes in `solution`)",
                             input_schema=SUBMIT_SCHEMAS[self.task]))
        return tools

    def idle_s(self) -> float:
        """Wall seconds since the last call was answered (or the episode began)."""
        return time.perf_counter() - self._last

    def close(self, why: str) -> None:
        """No call after this one (the agent's process ended)."""
        with self._lock:
            self.over = self.over or why

    def call(self, name: str, arguments: dict[str, Any]) -> ToolAnswer:
        with self._lock:
            if self.over:
                return ToolAnswer(f"Error: the episode is over ({self.over}); no further calls are taken", True)
            self.steps += 1
            step, t = self.steps, self._now()
            wall = time.perf_counter() - self._last
            args = dict(arguments or {})
            self.recorder.append("invocations", {
                "n": step, "t": t, "status": "ok", "detail": "", "wall_s": round(wall, 6),
                "in_chars": self._last_chars, "out_chars": len(json.dumps(args, sort_keys=True)),
                **self._usage(step)})
            if name == "submit":
                solution = args.get("solution")
                self.recorder.append("reports", {"t": t, "seq": step, "solution": solution})
                self.trajectory.append({"step": step, "t": t, "action": _shown(name, args), "observation": "submitted"})
                self.over = "submitted"
                self._last_chars, self._last = len(SUBMITTED), time.perf_counter()
                return ToolAnswer(SUBMITTED, False)
            known = any(name == tool for tool, _ in SCHEMAS)
            observation = self.aci.perform(Call(name, (), args)) if known else \
                f"Error: unknown API {name!r}; available: {', '.join(t for t, _ in SCHEMAS)}, submit"
            verdict = "error" if observation.startswith("Error") else "ok"
            self.recorder.append("tool_calls", {
                "seq": step, "t": t, "tool": name, "args": args, "verdict": verdict, "action": _shown(name, args),
                "observation": observation[:OBSERVATION_RECORDED], "result_chars": len(observation)})
            self.trajectory.append({"step": step, "t": t, "action": _shown(name, args),
                                    "observation": observation[:2000]})
            self._advance()
            if step >= self.max_steps:
                self.over = f"the step limit of {self.max_steps} tool calls is reached"
            self._last_chars, self._last = len(observation), time.perf_counter()
            return ToolAnswer(observation, verdict == "error")


def _describe(name: str, docs: dict[str, str]) -> str:
    head = next((h for h in docs if h.startswith(f"{name}(")), name)
    return f"{head}: {docs.get(head, '')}".strip()


def _shown(name: str, args: dict[str, Any]) -> str:
    return f"{name}({json.dumps(args, sort_keys=True)})"


class EpisodeMCPServer(MCPServer):
    """An MCPServer whose tools are one episode's ACI (mcp_server.MarathonMCPServer's shape)."""

    def __init__(self, tools: EpisodeTools) -> None:
        super().__init__(SERVER_NAME, instructions="An AIOpsLab problem on a microservice application: "
                         "observe with the tools, then call submit once with your answer.", log_level="WARNING")
        self._tools = tools

    async def list_tools(self) -> list[MCPTool]:
        return self._tools.list_tools()

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        tool = next((t for t in self._tools.list_tools() if t.name == name), None)
        return None if tool is None else dict(tool.input_schema)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> CallToolResult:
        answer = self._tools.call(name, arguments)
        return CallToolResult(content=[TextContent(type="text", text=answer.text)], is_error=answer.is_error)
