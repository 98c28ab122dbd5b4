"""The agent's incident reports: an upsert store with all-or-nothing validation.

An incident's alert set is whatever its last report said (the scorer replays every record and
judges each fault on the state at its evidence horizon), so each upsert stores the full set; omitted fields keep their earlier values so a status update does
not have to repeat a diagnosis. A call with any invalid incident changes none.

Incidents partition the alerts (ARCHITECTURE.md §7): an alert belongs to at most one incident at
any time, as in real incident tools that group an alert once. Reporting an alert under incident Y
while X holds it moves it: X loses it. Without that rule, filing every alert under every incident
would correlate every fault with every incident; with it, an alert is evidence for one incident
only. A call that lists one alert under two incidents has no single meaning and is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_marathon.interface.tools import ARTIFACT_VOCABULARY, CATEGORIES
from pytest_marathon.interface.verdicts import BadArguments

ARTIFACT_FORM = re.compile(r"^(code|image|env|limits|replicas|flag|secret|probe|node|network|pod):\S+$")


@dataclass
class Incident:
    incident_id: str
    alert_ids: list[str] = field(default_factory=list)
    status: str = "open"
    culprits: list[str] = field(default_factory=list)
    artifact: str = ""
    category: str = ""
    text: str = ""

    def record(self) -> dict[str, Any]:
        return {
            "incident_id": self.incident_id,
            "alert_ids": list(self.alert_ids),
            "status": self.status,
            "root_cause": {
                "culprits": list(self.culprits),
                "artifact": self.artifact,
                "category": self.category,
                "text": self.text,
            },
        }


@dataclass(frozen=True)
class Move:
    """An alert that changed incident in one call: `source` held it before, `destination` now."""

    alert_id: str
    source: str
    destination: str

    def record(self) -> dict[str, str]:
        return {"alert_id": self.alert_id, "from": self.source, "to": self.destination}


@dataclass(frozen=True)
class UpsertResult:
    """Every incident state one call changed.

    `reported` holds the named incidents' new state in call order; `moved_from` the new state of
    incidents the call did not name but took alerts from (sorted by id), so a reader replaying the
    `reports` stream sees every state change, not only the ones the agent spelled out. A record
    whose incident lost alerts to another incident in this call carries `moved_out` (sorted ids).
    """

    reported: list[dict[str, Any]]
    moved_from: list[dict[str, Any]]
    moves: list[dict[str, str]]


class IncidentStore:
    def __init__(self) -> None:
        self._incidents: dict[str, Incident] = {}

    def __contains__(self, incident_id: object) -> bool:
        return incident_id in self._incidents

    def records(self) -> list[dict[str, Any]]:
        return [self._incidents[key].record() for key in sorted(self._incidents)]

    def upsert(
        self,
        items: Sequence[Mapping[str, Any]],
        *,
        known_alert_ids: Iterable[str],
        workloads: Sequence[str],
    ) -> UpsertResult:
        """Apply every item or none, moving claimed alerts out of the incidents that held them."""
        known = set(known_alert_ids)
        seen: set[str] = set()
        updated: dict[str, Incident] = {}
        claims: dict[str, str] = {}
        for item in items:
            incident_id = item["incident_id"]
            if incident_id in seen:
                raise BadArguments(f"incident {incident_id!r} appears twice in one call")
            seen.add(incident_id)
            updated[incident_id] = self._merged(item, known, workloads)
            if "alert_ids" in item:
                for alert in updated[incident_id].alert_ids:
                    other = claims.setdefault(alert, incident_id)
                    if other != incident_id:
                        raise BadArguments(
                            f"alert {alert!r} is listed under incidents {other!r} and {incident_id!r} "
                            "in one call; an alert belongs to one incident: list it under one only"
                        )
        holder = {alert: inc.incident_id for inc in self._incidents.values() for alert in inc.alert_ids}
        moves = sorted(
            (Move(alert, holder[alert], destination) for alert, destination in claims.items()
             if holder.get(alert, destination) != destination),
            key=lambda m: (m.alert_id, m.source, m.destination),
        )
        moved_out: dict[str, list[str]] = {}
        for move in moves:
            moved_out.setdefault(move.source, []).append(move.alert_id)
        for source, alerts in moved_out.items():
            loser = updated.get(source) or _copy(self._incidents[source])
            # a source the call named with its own alert_ids already dropped them; one it named
            # without alert_ids, or did not name, keeps every other alert
            gone = set(alerts)
            loser.alert_ids = [a for a in loser.alert_ids if a not in gone]
            updated[source] = loser
        self._incidents.update(updated)
        return UpsertResult(
            reported=[_with_moves(updated[i["incident_id"]].record(), moved_out.get(i["incident_id"]))
                      for i in items],
            moved_from=[
                _with_moves(updated[i].record(), moved_out[i]) for i in sorted(moved_out) if i not in seen
            ],
            moves=[m.record() for m in moves],
        )

    def _merged(self, item: Mapping[str, Any], known: set[str], workloads: Sequence[str]) -> Incident:
        incident_id = item["incident_id"]
        old = self._incidents.get(incident_id, Incident(incident_id))
        new = _copy(old)
        if "alert_ids" in item:
            unknown = sorted(set(item["alert_ids"]) - known)
            if unknown:
                shown = ", ".join(unknown[:10]) + (" …" if len(unknown) > 10 else "")
                raise BadArguments(
                    f"incident {incident_id!r}: unknown alert ids ({len(unknown)}): {shown}; use "
                    "alert_id values from get_alerts"
                )
            new.alert_ids = sorted(set(item["alert_ids"]))
        if "status" in item:
            new.status = item["status"]
        cause = item.get("root_cause") or {}
        if "culprits" in cause:
            strangers = sorted(set(cause["culprits"]) - set(workloads))
            if strangers:
                raise BadArguments(
                    f"incident {incident_id!r}: culprits {strangers} are not workloads of the "
                    f"application ({', '.join(workloads)})"
                )
            new.culprits = sorted(set(cause["culprits"]))
        if "artifact" in cause:
            artifact = cause["artifact"].strip()
            if artifact and not ARTIFACT_FORM.match(artifact):
                raise BadArguments(
                    f"incident {incident_id!r}: artifact {artifact!r} is not in the canonical "
                    f"vocabulary: {ARTIFACT_VOCABULARY}"
                )
            new.artifact = artifact
        if "category" in cause:
            if cause["category"] not in CATEGORIES:
                raise BadArguments(f"category must be one of {', '.join(CATEGORIES)}")
            new.category = cause["category"]
        if "text" in cause:
            new.text = cause["text"]
        return new


def _copy(incident: Incident) -> Incident:
    """An independent copy, so a call that fails half-way leaves the stored incidents untouched."""
    new = Incident(**vars(incident))
    new.alert_ids = list(incident.alert_ids)
    new.culprits = list(incident.culprits)
    return new


def _with_moves(record: dict[str, Any], moved_out: list[str] | None) -> dict[str, Any]:
    if moved_out:
        record["moved_out"] = sorted(moved_out)
    return record
