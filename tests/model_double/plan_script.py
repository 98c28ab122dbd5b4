"""The scripted model of the plan-making baselines (RAG and Keep-agent): one JSON plan per call.

It reads the request as a model would read the agents' prompt (`agents/prompts/rag/user.md` and,
for Keep-agent, `agents/prompts/keep-agent/user.md`): the sections are `## ` headings, and every
alert or incident is one JSON line. Its plan:

* RAG (no "Fixed incidents" section): one incident `plan-<workload>` per workload the alerts'
  labels name, with the workload as culprit;
* Keep-agent: a root cause for every fixed incident whose alerts name a workload, and the
  unassigned alerts in one incident `plan-unassigned`; with `steal` on, that incident also claims
  the first alert of the first fixed incident, which the agent must discard;
* a repair (`repair_tool`, `{"service": <workload>}`) for each incident with a firing alert and
  no repair in its earlier record (`repairs` of the earlier incidents, or the fixed incident's);
* status `open` while an alert fires, else `resolved`.

`hostile` gives the first incidents repairs that are no act tool (a read, the report tool, a
made-up tool), which the agent must refuse, and the others none; `garbage` answers text that is no plan.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .conversation import Conversation
from .script import Text, Turn, workload_of

HOSTILE_REPAIRS = (
    {"tool": "get_logs", "args": {"service": "frontend", "contains": "plan-asked-read"}},
    {"tool": "report_incidents", "args": {"incidents": []}},
    {"tool": "delete_namespace", "args": {"namespace": "boutique"}},
)


def sections(text: str) -> dict[str, list[Any]]:
    """The JSON lines under each `## ` heading, by the heading's first two words."""
    found: dict[str, list[Any]] = {}
    current: list[Any] | None = None
    for raw in text.splitlines():
        if raw.startswith("## "):
            current = found.setdefault(" ".join(raw[3:].split()[:2]), [])
            continue
        if current is None or not raw.startswith("{"):
            continue
        try:
            current.append(json.loads(raw))
        except json.JSONDecodeError:
            continue
    return found


def _firing(alerts: list[Mapping[str, Any]], ids: list[str]) -> bool:
    states = {a["alert_id"]: a.get("state") for a in alerts}
    return any(states.get(i) == "firing" for i in ids)


@dataclass
class PlanScript:
    repair_tool: str = "restart_service"
    steal: bool = False
    hostile: bool = False
    garbage: bool = False
    plans: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, conv: Conversation) -> Turn:
        if self.garbage:
            return Text("I think the cart service is broken, restart it maybe?")
        found = sections("\n".join(conv.user_texts))
        alerts = found.get("Alert history", [])
        earlier = {i["incident_id"]: i for i in found.get("Incidents you", [])}
        if "Fixed incidents" in found:
            incidents = self._keep(alerts, found["Fixed incidents"], found.get("Unassigned alerts", []))
        else:
            incidents = self._rag(alerts)
        for incident in incidents:
            workload = incident.pop("_workload", None)
            repaired = earlier.get(incident["incident_id"], {}).get("repairs") or incident.pop("_repaired", None)
            firing = _firing(alerts, incident.get("alert_ids") or incident.pop("_alert_ids", []))
            incident.pop("_alert_ids", None)
            incident.pop("_repaired", None)
            incident["status"] = "open" if firing else "resolved"
            if workload is not None:
                incident["root_cause"] = {
                    "culprits": [workload],
                    "artifact": f"image:{workload}",
                    "category": "deployment",
                    "text": f"alerts name {workload}",
                }
            if workload is not None and firing and not repaired:
                incident["repair"] = {"tool": self.repair_tool, "args": {"service": workload}}
        if self.hostile:  # only repairs that are no act tool
            for incident in incidents:
                incident.pop("repair", None)
            for incident, repair in zip(incidents, HOSTILE_REPAIRS):
                incident["repair"] = repair
        plan = {"incidents": incidents}
        self.plans.append(plan)
        return Text(json.dumps(plan))

    @staticmethod
    def _rag(alerts: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
        groups: dict[str, list[str]] = defaultdict(list)
        for alert in alerts:
            workload = workload_of(alert.get("labels") or {})
            if workload is not None:
                groups[workload].append(alert["alert_id"])
        return [
            {"incident_id": f"plan-{w}", "alert_ids": ids, "_workload": w}
            for w, ids in sorted(groups.items())
        ]

    def _keep(
        self, alerts: list[Mapping[str, Any]], fixed: list[Mapping[str, Any]], unassigned: list[Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        by_id = {a["alert_id"]: a for a in alerts}
        incidents: list[dict[str, Any]] = []
        for inc in fixed:
            ids = list(inc.get("alert_ids") or [])
            workloads = sorted({w for i in ids if i in by_id and (w := workload_of(by_id[i].get("labels") or {}))})
            incidents.append(
                {
                    "incident_id": inc["incident_id"],
                    "_alert_ids": ids,
                    "_workload": workloads[0] if workloads else None,
                    "_repaired": bool(inc.get("repairs")),
                }
            )
        loose = [a["alert_id"] for a in unassigned]
        if self.steal and fixed and fixed[0].get("alert_ids"):
            loose.append(fixed[0]["alert_ids"][0])
        if loose:
            incidents.append({"incident_id": "plan-unassigned", "alert_ids": loose})
        return incidents
