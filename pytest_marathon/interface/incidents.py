"""The agent's incident reports: an upsert store with all-or-nothing validation.

An incident's alert set is whatever the last report said (the scorer reads the final state), so
each upsert stores the full set; omitted fields keep their earlier values so a status update does
not have to repeat a diagnosis. A call with any invalid incident changes none.
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
    ) -> list[dict[str, Any]]:
        """Apply every item or none; returns the stored record of each item, in call order."""
        known = set(known_alert_ids)
        seen: set[str] = set()
        updated: list[Incident] = []
        for item in items:
            incident_id = item["incident_id"]
            if incident_id in seen:
                raise BadArguments(f"incident {incident_id!r} appears twice in one call")
            seen.add(incident_id)
            updated.append(self._merged(item, known, workloads))
        for incident in updated:
            self._incidents[incident.incident_id] = incident
        return [incident.record() for incident in updated]

    def _merged(self, item: Mapping[str, Any], known: set[str], workloads: Sequence[str]) -> Incident:
        incident_id = item["incident_id"]
        old = self._incidents.get(incident_id, Incident(incident_id))
        new = Incident(**vars(old))
        new.alert_ids = list(old.alert_ids)
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
