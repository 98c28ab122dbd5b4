"""The scripted model of the ReAct baseline: a tool-calling conversation over Chat Completions.

Per conversation (ReAct starts a fresh one at every invocation):

1. `get_topology` (a read the default script never makes);
2. `get_alerts` (the firing alerts, one page of `limit`, small enough that ReAct does not cut
   the answer);
3. `report_incidents`: the alerts grouped by the workload their labels name, one incident
   `inc-<workload>` each (`script.group_alerts`), which moves them out of the incident the agent
   pre-filed them under;
4. `rollback_service` for the workload with the most firing alerts, citing its incident, unless
   the first message's incidents show that workload's incident already resolved;
5. a short text without tool calls, which ends the loop.

With `endless` on it never stops calling `get_alerts`, to show the step limit. With `malformed` on
the first call's arguments are a JSON list instead of an object; the tool answers that come back
for it are kept in `answers_to_malformed`. A refused tool call ends the conversation with a text
quoting it, as in `SreScript`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .conversation import Conversation
from .script import Text, ToolCall, Turn, group_alerts, refusal, tool_answer

STEPS = ("get_topology", "get_alerts", "report_incidents", "rollback_service")


@dataclass
class ReactScript:
    endless: bool = False
    malformed: bool = False
    limit: int = 20
    answers_to_malformed: list[str] = field(default_factory=list)

    def __call__(self, conv: Conversation) -> Turn:
        if self.endless:
            return ToolCall("get_alerts", {"state": "firing", "limit": 1})
        if self.malformed:
            first = conv.calls[0] if conv.calls else None
            if first is None:
                return ToolCall("get_topology", ["not", "an", "object"])  # type: ignore[arg-type]
            if len(conv.calls) == 1 and first.result is not None:
                self.answers_to_malformed.append(first.result)
            conv.calls = conv.calls[1:]
        done = [call.name for call in conv.calls]
        for call in conv.calls:
            if call.result is not None and (why := refusal(call)):
                return Text(f"The tool call {call.name} failed: {why}")
        if "get_topology" not in done:
            return ToolCall("get_topology", {})
        if "get_alerts" not in done:
            return ToolCall("get_alerts", {"state": "firing", "limit": self.limit})
        read = next(c for c in conv.calls if c.name == "get_alerts")
        incidents, firing = group_alerts(list((tool_answer(read) or {}).get("alerts") or []))
        if not incidents:
            return Text("No firing alerts to handle.")
        if "report_incidents" not in done:
            return ToolCall("report_incidents", {"incidents": incidents})
        if firing and "rollback_service" not in done:
            workload, _ = firing.most_common(1)[0]
            return ToolCall("rollback_service", {"incident_id": f"inc-{workload}", "service": workload})
        return Text(f"Reported {len(incidents)} incidents.")
