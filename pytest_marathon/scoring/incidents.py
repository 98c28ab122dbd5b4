"""The agent's incidents through time, replayed from `reports.jsonl` with alerts partitioned.

Every metric that reads incidents asks "what did the agent's incidents say at time h": the
matching at each fault's evidence horizon, Risk at each action, the times to detect and locate.
A record is an incident's whole state after one upsert; replaying the records in recorded order
gives the state at any moment. An alert belongs to at most one incident at a time (ARCHITECTURE.md
section 7): a record that lists an alert takes it from whichever incident held it, so filing
every alert under many incidents can never give more than one of them an alert, even when a
hand-made bundle omits the interface's own "moved out" records.
"""

from __future__ import annotations

from dataclasses import dataclass

from .evidence import Report


@dataclass(frozen=True)
class Diagnosis:
    culprits: frozenset[str]
    artifact: str | None


@dataclass(frozen=True)
class IncidentState:
    """One incident as it stood after a record: its alerts and its root cause."""

    alert_ids: frozenset[str]
    diagnosis: Diagnosis


class IncidentReplay:
    """Incident states after each report record, with the partition rule applied."""

    def __init__(self) -> None:
        self._alerts: dict[str, set[str]] = {}
        self._diagnosis: dict[str, Diagnosis] = {}
        self._owner: dict[str, str] = {}

    def apply(self, report: Report) -> list[str]:
        """Apply one record; returns the alert ids it placed in its incident that the incident
        did not hold before (the alerts it gained, moved from elsewhere or new)."""
        incident = report.incident_id
        held = self._alerts.setdefault(incident, set())
        for dropped in held - report.alert_ids:
            if self._owner.get(dropped) == incident:
                del self._owner[dropped]
        gained = sorted(report.alert_ids - held)
        for alert_id in report.alert_ids:
            previous = self._owner.get(alert_id)
            if previous is not None and previous != incident:
                self._alerts[previous].discard(alert_id)
            self._owner[alert_id] = incident
        self._alerts[incident] = set(report.alert_ids)
        self._diagnosis[incident] = Diagnosis(report.culprits, report.artifact)
        return gained

    def owner(self, alert_id: str) -> str | None:
        return self._owner.get(alert_id)

    def state(self, incident: str) -> IncidentState | None:
        if incident not in self._alerts:
            return None
        return IncidentState(frozenset(self._alerts[incident]), self._diagnosis[incident])
