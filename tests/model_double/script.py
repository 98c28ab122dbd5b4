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
4. answer with a short text that ends in the fenced incident JSON block.

A tool answer that is an error (or says the call was refused) ends the conversation with a text
that quotes it and has no incident block, so a client that cannot call tools shows up as a failed
invocation instead of a quiet zero. A request that offers no `get_alerts` tool (a client's side
request such as a title or a quota check) gets a one-line text.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .conversation import Conversation, ToolResult

WORKLOAD_LABELS = ("deployment", "service", "service_name", "container")


@dataclass(frozen=True)
class ToolCall:
    name: str  # the full name as the client offered it
    arguments: Mapping[str, Any]
    namespace: str = ""


@dataclass(frozen=True)
class Text:
    text: str


Turn = ToolCall | Text
Script = Callable[[Conversation], Turn]


def _json_values(text: str) -> list[Any]:
    """JSON values in a tool answer: the text itself, or text parts wrapped by the client."""
    try:
        value = json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return []
    values = [value]
    if isinstance(value, Mapping):
        for part in value.get("content") or []:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                values.extend(_json_values(part["text"]))
        if isinstance(value.get("structuredContent"), Mapping):
            values.append(value["structuredContent"])
    elif isinstance(value, list):
        for part in value:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                values.extend(_json_values(part["text"]))
    return values


def tool_answer(call: ToolResult) -> Mapping[str, Any] | None:
    """The project's tool answer (a JSON object) inside what the client passed back."""
    for value in _json_values(call.result or ""):
        if isinstance(value, Mapping) and ("ok" in value or "alerts" in value or "error" in value):
            return value
    return None


def refusal(call: ToolResult) -> str | None:
    """Why a tool call failed, or None when it produced a normal answer."""
    answer = tool_answer(call)
    if answer is not None and answer.get("ok") is not False and "error" not in answer:
        return None
    if answer is not None:
        return str(answer.get("error") or answer)
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


@dataclass
class SreScript:
    """Callable script; `final_note` is added before the JSON block of the final answer."""

    final_note: str = "Triage done."
    limit: int = 200
    decisions: list[str] = field(default_factory=list)

    def __call__(self, conv: Conversation) -> Turn:
        turn = self._decide(conv)
        self.decisions.append(turn.name if isinstance(turn, ToolCall) else "text")
        return turn

    def _call(self, conv: Conversation, short: str, arguments: Mapping[str, Any]) -> Turn:
        name = conv.tool_named(short)
        if name is None:
            return Text(f"I cannot continue: no `{short}` tool is offered.")
        return ToolCall(name, dict(arguments), conv.tools.get(name, ""))

    def _decide(self, conv: Conversation) -> Turn:
        if conv.tool_named("get_alerts") is None:
            return Text("OK")
        for call in conv.calls:
            if call.result is not None and (why := refusal(call)) is not None:
                return Text(f"The tool call {call.name} failed: {why}")
        reads = conv.calls_of("get_alerts")
        if not reads:
            return self._call(conv, "get_alerts", {"state": "any", "limit": self.limit})
        answer = tool_answer(reads[-1]) or {}
        incidents, firing = group_alerts(list(answer.get("alerts") or []))
        if not incidents:
            return Text(f"{self.final_note} No alerts.\n\n```json\n{json.dumps({'incidents': []})}\n```")
        if not conv.calls_of("report_incidents"):
            return self._call(conv, "report_incidents", {"incidents": incidents})
        if firing and not conv.calls_of("restart_service"):
            workload, _ = firing.most_common(1)[0]
            return self._call(
                conv, "restart_service", {"incident_id": f"inc-{workload}", "service": workload}
            )
        block = json.dumps({"incidents": incidents}, indent=1)
        return Text(f"{self.final_note} Reported {len(incidents)} incidents.\n\n```json\n{block}\n```")
