"""The one plan RAG's (and Keep-agent's) model returns, read and checked before anything runs.

Paper, Appendix G, "RAG": "The model returns one plan that groups alerts into incidents and gives
each a root cause, an optional repair from the act and guarded tools, and a status. The code
publishes and executes the plan as written." Executing a model's text as written is only safe if
the text cannot ask for more than the paper allows, so:

* a plan that is not a JSON object with an `incidents` list is malformed: nothing runs, and the
  invocation records why (`PlanRejected`);
* inside a well-formed plan, each problem is dropped alone and recorded (`Plan.problems`): an
  incident without a valid id, an alert id the history does not hold, an alert placed twice, an
  unknown status or category, and above all a repair naming a tool that is not an act tool (a
  read, the report tool, a name the interface does not have), which is refused;
* a repair's arguments must be a JSON object; the code sets their `incident_id` to the incident
  the repair belongs to, so a repair always cites the incident it serves.

The interface still validates every call against its schema and policy; this layer only keeps
the plan inside the paper's rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_marathon.interface.tools import INCIDENT_STATUSES, TOOLS
from pytest_marathon.vocabulary import CATEGORIES

#: The tools a plan's repair may name: the interface's act tools (this interface's guarded
#: tools, propose/build/submit patch, are act tools too).
REPAIR_TOOLS: tuple[str, ...] = tuple(spec.name for spec in TOOLS if spec.kind == "act")
ROOT_CAUSE_KEYS = ("culprits", "artifact", "category", "text")
_INCIDENT_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
MAX_INCIDENTS = 50


class PlanRejected(ValueError):
    """The model's answer is not a plan at all; the invocation is a recorded no-op."""


@dataclass(frozen=True)
class Repair:
    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class PlannedIncident:
    incident_id: str
    alert_ids: tuple[str, ...]
    status: str
    root_cause: dict[str, Any] | None
    repair: Repair | None

    def report_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"incident_id": self.incident_id, "status": self.status}
        if self.alert_ids:
            entry["alert_ids"] = list(self.alert_ids)
        if self.root_cause:
            entry["root_cause"] = dict(self.root_cause)
        return entry


@dataclass(frozen=True)
class Plan:
    incidents: tuple[PlannedIncident, ...]
    problems: tuple[str, ...] = field(default=())


def _root_cause(raw: Any, where: str, problems: list[str]) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: root_cause is not an object; dropped")
        return None
    cause: dict[str, Any] = {}
    culprits = raw.get("culprits")
    if isinstance(culprits, list):
        cause["culprits"] = [str(c)[:100] for c in culprits if isinstance(c, str) and c][:20]
    if isinstance(raw.get("artifact"), str):
        cause["artifact"] = raw["artifact"][:300]
    category = raw.get("category")
    if isinstance(category, str) and category in CATEGORIES:
        cause["category"] = category
    elif category is not None:
        problems.append(f"{where}: unknown category {str(category)[:40]!r}; dropped")
    if isinstance(raw.get("text"), str):
        cause["text"] = raw["text"][:4000]
    return cause or None


def _repair(raw: Any, incident_id: str, where: str, problems: list[str]) -> Repair | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: repair is not an object; refused")
        return None
    tool = raw.get("tool")
    if not isinstance(tool, str) or tool not in REPAIR_TOOLS:
        problems.append(f"{where}: repair tool {str(tool)[:60]!r} is not an act tool; refused")
        return None
    args = raw.get("args", {})
    if not isinstance(args, Mapping):
        problems.append(f"{where}: repair args are not an object; refused")
        return None
    return Repair(tool, {**{str(k): v for k, v in args.items()}, "incident_id": incident_id})


def parse_plan(text: str, known_alerts: Collection[str]) -> Plan:
    """Read the model's answer; raises PlanRejected when it is no plan at all."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlanRejected(f"the plan is not JSON ({exc.msg})") from exc
    if not isinstance(value, Mapping) or not isinstance(value.get("incidents"), list):
        raise PlanRejected('the plan is not an object with an "incidents" list')
    problems: list[str] = []
    incidents: list[PlannedIncident] = []
    placed: set[str] = set()
    seen_ids: set[str] = set()
    for index, raw in enumerate(value["incidents"][:MAX_INCIDENTS]):
        where = f"incident {index}"
        incident_id = raw.get("incident_id") if isinstance(raw, Mapping) else None
        if not isinstance(incident_id, str) or not _INCIDENT_ID.match(incident_id):
            problems.append(f"{where}: no valid incident_id; dropped")
            continue
        if incident_id in seen_ids:
            problems.append(f"{where}: incident {incident_id} planned twice; dropped")
            continue
        seen_ids.add(incident_id)
        where = f"incident {incident_id}"
        alert_ids = []
        for alert_id in raw.get("alert_ids") or []:
            if not isinstance(alert_id, str) or alert_id not in known_alerts:
                problems.append(f"{where}: unknown alert {str(alert_id)[:60]!r}; dropped")
            elif alert_id in placed:
                problems.append(f"{where}: alert {alert_id} already placed; dropped")
            else:
                placed.add(alert_id)
                alert_ids.append(alert_id)
        status = raw.get("status", "open")
        if status not in INCIDENT_STATUSES:
            problems.append(f"{where}: unknown status {str(status)[:30]!r}; kept open")
            status = "open"
        incidents.append(
            PlannedIncident(
                incident_id,
                tuple(alert_ids),
                status,
                _root_cause(raw.get("root_cause"), where, problems),
                _repair(raw.get("repair"), incident_id, where, problems),
            )
        )
    if len(value["incidents"]) > MAX_INCIDENTS:
        problems.append(f"plan has more than {MAX_INCIDENTS} incidents; the rest dropped")
    return Plan(tuple(incidents), tuple(problems))
