"""The default script: an on-call SRE that reads alerts, files incidents, acts once and answers.

A script maps the conversation so far to the next assistant turn, so the same script drives any
client over any wire format, and a fresh conversation (a new CLI process per invocation) starts
over. `SreScript`, per conversation:

1. call `get_alerts` (all alerts, one page of 200);
2. call `report_incidents` with the alerts grouped by the workload their labels name
   (`deployment`, `service`, `service_name`, `container`, the pod's deployment), one incident
   `inc-<workload>` each;
3. call `restart_service` for the workload of the incident with the most firing alerts, citing
   that incident (skipped when nothing fires);
4. with `notes` on, write `notes/invocation-<n>.md` in the working directory with the client's
   own file or shell tool (Claude Code `Write` with the absolute path its prompt names as
   "Primary working directory"; Codex `exec_command`), as the benchmark's rules ask; a failed
   write is remembered in `note_failures`, not fatal;
5. answer with a short text that ends in the fenced incident JSON block.

How a tool is called depends on what the client offers:

* directly, when the request lists the tool (`get_alerts`, `mcp__marathon__get_alerts`, ...);
* through Codex's code mode, when the request offers the free-form `exec` tool instead (Codex
  0.171 with its default model: nested tools, MCP tools among them, are reached from JavaScript
  as `tools.<name>(args)`, and deferred ones are listed only in `ALL_TOOLS`): the script first
  runs `text(JSON.stringify(ALL_TOOLS.map(t => t.name)))` to find the names, then one
  `await tools.<name>({...})` per step. Each script starts with a `// double: <step>` comment so
  the next request shows which step an `exec` call was.

A tool answer that is an error (or says the call was refused) ends the conversation with a text
that quotes it and has no incident block, so a client that cannot call tools shows up as a failed
invocation instead of a quiet zero. A request that offers neither (a client's side request such as
a title or a quota check) gets a one-line text, unless the client offers a tool to wait for MCP
servers still connecting (Claude Code's `WaitForMcpServers`): then the script waits, as a model
that needs those tools would, up to `max_waits` times.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .conversation import Conversation, ToolResult

SCRIPTED_TOOLS = ("get_alerts", "report_incidents", "restart_service")
WORKLOAD_LABELS = ("deployment", "service", "service_name")
CODE_TOOL = "exec"
MARKER = re.compile(r"^// double: (\w+)")


@dataclass(frozen=True)
class ToolCall:
    name: str  # the full name as the client offered it
    arguments: Mapping[str, Any]
    namespace: str = ""
    custom: bool = False  # a free-form tool: `arguments["input"]` is the raw input text


@dataclass(frozen=True)
class Text:
    text: str


Turn = ToolCall | Text
Script = Callable[[Conversation], Turn]


def json_values(text: str) -> list[Any]:
    """JSON values in a tool answer: the text itself, the first JSON value inside it, and the
    text parts a client wrapped around the project's answer (MCP `content`)."""
    try:
        values = [json.loads(text)]
    except (TypeError, json.JSONDecodeError):
        values = []
        decoder = json.JSONDecoder()
        for match in re.finditer(r"[\[{]", text or ""):
            try:
                values = [decoder.raw_decode(text, match.start())[0]]
                break
            except json.JSONDecodeError:
                continue
    found = list(values)
    for value in values:
        parts = value.get("content") if isinstance(value, Mapping) else value
        if isinstance(value, Mapping) and isinstance(value.get("structuredContent"), Mapping):
            found.append(value["structuredContent"])
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                found.extend(json_values(part["text"]))
    return found


def tool_answer(call: ToolResult) -> Mapping[str, Any] | None:
    """The project's tool answer (a JSON object) inside what the client passed back: the
    innermost object that is not an MCP result wrapper (`content` list)."""
    objects = [v for v in json_values(call.result or "") if isinstance(v, Mapping)]
    answers = [v for v in objects if not isinstance(v.get("content"), list)]
    return answers[-1] if answers else None


def refusal(call: ToolResult) -> str | None:
    """Why a tool call failed, or None when it produced a normal answer."""
    objects = [v for v in json_values(call.result or "") if isinstance(v, Mapping)]
    answer = tool_answer(call)
    failed = call.is_error or any(v.get("isError") is True for v in objects)
    if answer is not None and not failed and answer.get("ok") is not False and "error" not in answer:
        return None
    if answer is not None:
        return str(answer.get("error") or answer)[:400]
    return (call.result or "no answer").strip()[:400] or "empty answer"


def workload_of(labels: Mapping[str, Any]) -> str | None:
    for key in WORKLOAD_LABELS:
        if labels.get(key):
            return str(labels[key])
    pod = str(labels.get("pod") or "")
    parts = pod.split("-")
    return "-".join(parts[:-2]) if len(parts) >= 3 else None


def group_alerts(alerts: list[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], Counter[str]]:
    """One incident per workload, alerts in the order given (alerts naming none are left out),
    and the firing alerts per workload."""
    groups: dict[str, list[str]] = defaultdict(list)
    firing: Counter[str] = Counter()
    for alert in alerts:
        workload = workload_of(alert.get("labels") or {})
        if workload is None or "alert_id" not in alert:
            continue
        groups[workload].append(str(alert["alert_id"]))
        if alert.get("state") == "firing":
            firing[workload] += 1
    incidents = [
        {
            "incident_id": f"inc-{workload}",
            "alert_ids": ids,
            "status": "open" if firing[workload] else "resolved",
            "root_cause": {
                "culprits": [workload],
                "artifact": f"pod:{workload}",
                "category": "infrastructure",
                "text": f"{len(ids)} alerts on {workload}",
            },
        }
        for workload, ids in groups.items()
    ]
    return incidents, firing


@dataclass(frozen=True)
class Step:
    """One scripted tool call as it happened, whichever way it was made."""

    short: str  # get_alerts | report_incidents | restart_service | discover
    call: ToolResult


def steps_of(conv: Conversation, shorts: tuple[str, ...] = SCRIPTED_TOOLS) -> list[Step]:
    """The scripted calls made so far (`shorts`: the tools a script calls by short name)."""
    steps = []
    for call in conv.calls:
        marker = MARKER.match(str(call.arguments.get("input") or "")) if call.name.endswith(CODE_TOOL) else None
        if marker:
            steps.append(Step(marker.group(1), call))
            continue
        for short in shorts:
            if conv.tool_named(short) == call.name or call.name.endswith("__" + short):
                steps.append(Step(short, call))
        if call.name in {"Write", "exec_command"}:
            steps.append(Step("notes", call))
    return steps


def _note_failed(call: ToolResult) -> bool:
    text = (call.result or "").lower()
    return call.is_error or "written" not in text and "success" not in text and "created" not in text


@dataclass
class SreScript:
    """Callable script; `final_note` is added before the JSON block of the final answer."""

    final_note: str = "Triage done."
    limit: int = 200
    max_waits: int = 3
    notes: bool = True
    decisions: list[str] = field(default_factory=list)
    note_failures: list[str] = field(default_factory=list)

    def __call__(self, conv: Conversation) -> Turn:
        turn = self._decide(conv)
        self.decisions.append(turn.name if isinstance(turn, ToolCall) else "text")
        return turn

    def _decide(self, conv: Conversation) -> Turn:
        code = next((n for n in conv.custom_tools if n == CODE_TOOL), None)
        if conv.tool_named("get_alerts") is None and code is None:
            return wait_for_mcp(conv, self.max_waits) or Text("OK")
        steps = steps_of(conv)
        for step in steps:
            if step.short in SCRIPTED_TOOLS and step.call.result is not None and (why := refusal(step.call)):
                return Text(f"The tool call {step.short} failed: {why}")
        names = tool_names(conv, steps, SCRIPTED_TOOLS)
        if not isinstance(names, dict):
            return names
        done = {step.short for step in steps}
        if "get_alerts" not in done:
            return call_tool(conv, names, "get_alerts", {"state": "any", "limit": self.limit})
        read = next(s for s in steps if s.short == "get_alerts")
        answer = tool_answer(read.call) or {}
        incidents, firing = group_alerts(list(answer.get("alerts") or []))
        if not incidents:
            return Text(f"{self.final_note} No alerts.\n\n```json\n{json.dumps({'incidents': []})}\n```")
        if "report_incidents" not in done:
            return call_tool(conv, names, "report_incidents", {"incidents": incidents})
        if firing and "restart_service" not in done:
            workload, _ = firing.most_common(1)[0]
            arguments = {"incident_id": f"inc-{workload}", "service": workload}
            return call_tool(conv, names, "restart_service", arguments)
        if self.notes and "notes" not in done:
            note = self._note(conv, incidents)
            if note is not None:
                return note
        for step in steps:
            if step.short == "notes" and step.call.result is not None and _note_failed(step.call):
                self.note_failures.append(step.call.result[:400])
        block = json.dumps({"incidents": incidents}, indent=1)
        return Text(f"{self.final_note} Reported {len(incidents)} incidents.\n\n```json\n{block}\n```")

    def _note(self, conv: Conversation, incidents: list[dict[str, Any]]) -> Turn | None:
        texts = "\n".join([conv.system, *conv.user_texts])
        number = re.search(r"Invocation (\d+)", texts)
        path = f"notes/invocation-{number.group(1) if number else 0}.md"
        content = "".join(f"- {i['incident_id']}: {len(i['alert_ids'])} alerts\n" for i in incidents)
        write = conv.tool_named("Write")
        cwd = re.search(r"Primary working directory: (\S+)", texts)
        if write is not None and cwd is not None:
            return ToolCall(write, {"file_path": f"{cwd.group(1)}/{path}", "content": content}, conv.tools[write])
        command = f"mkdir -p notes && printf %s {shlex.quote(content)} > {path} && echo written"
        if conv.tool_named("exec_command") is not None:
            return ToolCall("exec_command", {"cmd": command}, conv.tools["exec_command"])
        if CODE_TOOL in conv.custom_tools:
            js = f"// double: notes\nconst answer = await tools.exec_command({json.dumps({'cmd': command})});\ntext(JSON.stringify(answer));\n"
            return ToolCall(CODE_TOOL, {"input": js}, conv.tools.get(CODE_TOOL, ""), custom=True)
        return None


def wait_for_mcp(conv: Conversation, max_waits: int) -> Turn | None:
    """A call of the client's tool that waits for MCP servers still connecting (Claude Code's
    `WaitForMcpServers`), as a model that needs their tools would make, up to `max_waits` times."""
    wait = next((n for n in conv.tools if "wait" in n.lower() and "mcp" in n.lower()), None)
    if wait is not None and len([c for c in conv.calls if c.name == wait]) < max_waits:
        return ToolCall(wait, {}, conv.tools[wait])
    return None


def tool_names(conv: Conversation, steps: list[Step], shorts: tuple[str, ...]) -> dict[str, str] | Turn:
    """Full tool names by short name: offered directly, or found through Codex code mode's
    `ALL_TOOLS` (the turn that asks is returned until the listing is answered)."""
    direct = {short: conv.tool_named(short) for short in shorts}
    if all(direct.values()):
        return {k: v for k, v in direct.items() if v}
    listing = next((s.call for s in steps if s.short == "discover"), None)
    if listing is None:
        js = "// double: discover\ntext(JSON.stringify(ALL_TOOLS.map((t) => t.name)));\n"
        return ToolCall(CODE_TOOL, {"input": js}, conv.tools.get(CODE_TOOL, ""), custom=True)
    if listing.result is None:
        return Text("The tool listing got no answer.")
    listed = [v for v in json_values(listing.result) if isinstance(v, list)]
    available = [str(n) for n in (listed[0] if listed else [])]
    names = {}
    for short in shorts:
        match = next((n for n in available if n == short or n.endswith("__" + short)), None)
        if match is None:
            return Text(f"I cannot continue: no `{short}` tool among {available[:40]}")
        names[short] = match
    return names


def call_tool(conv: Conversation, names: dict[str, str], short: str, arguments: Mapping[str, Any]) -> Turn:
    """A call of the tool `short`: directly when offered, else from code mode's JavaScript,
    marked so that `steps_of` knows it again."""
    name = names[short]
    if name in conv.tools:
        return ToolCall(name, dict(arguments), conv.tools.get(name, ""))
    js = (
        f"// double: {short}\n"
        f"const answer = await tools.{name}({json.dumps(arguments)});\n"
        "text(JSON.stringify(answer));\n"
    )
    return ToolCall(CODE_TOOL, {"input": js}, conv.tools.get(CODE_TOOL, ""), custom=True)
