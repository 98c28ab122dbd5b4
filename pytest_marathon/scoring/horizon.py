"""What the agent's incidents said about each fault while it mattered (its evidence horizon).

A fault is judged on the incident state at h_f = revert_f + 60 s: which incidents held its
attributable alerts then (the matching's edges), what each diagnosed then (Located), and when
an incident first held one of its alerts and first located it (MTTD, MTTL). Records after h_f
never change these, so incidents filed or relabelled in hindsight earn nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .evidence import Evidence, Fault, Report, located
from .incidents import Diagnosis, IncidentReplay
from .matching import Position


@dataclass
class FaultView:
    """One fault as the incidents showed it up to its horizon."""

    candidates: dict[str, Position] = field(default_factory=dict)  # incident -> first held
    diagnoses: dict[str, Diagnosis] = field(default_factory=dict)  # at the horizon
    detected_at: float | None = None
    located_at: float | None = None


@dataclass(frozen=True)
class IncidentActivity:
    """Diagnostics of the agent's incident work (beside the score, never inside it)."""

    incidents_with_alerts: frozenset[str]
    reports_after_horizon: int


class _Judge:
    """One pass over the report records: each fault's view is frozen when the replay passes its
    horizon, so no record after it can reach the fault's credit."""

    def __init__(self, evidence: Evidence) -> None:
        self.evidence = evidence
        self.views = {f.fault_id: FaultView() for f in evidence.faults}
        self.first_held: dict[tuple[str, str], Position] = {}
        self.state = IncidentReplay()
        self.with_alerts: set[str] = set()
        self.late = 0

    def close(self, fault: Fault) -> None:
        """Freeze the fault's view at its horizon: the incidents holding its alerts now."""
        view = self.views[fault.fault_id]
        for alert_id in sorted(self.evidence.attributable[fault.fault_id]):
            incident = self.state.owner(alert_id)
            if incident is None:
                continue
            view.candidates[incident] = self.first_held[(fault.fault_id, incident)]
            current = self.state.state(incident)
            assert current is not None
            view.diagnoses[incident] = current.diagnosis

    def apply(self, report: Report) -> None:
        before = self.state.state(report.incident_id)
        gained = self.state.apply(report)
        after = self.state.state(report.incident_id)
        assert after is not None
        if after.alert_ids:
            self.with_alerts.add(report.incident_id)
        # A fault's view is frozen at its horizon (`close`), so what a later record sets here
        # never reaches its a_f, b_f or times: those are read only for matched faults.
        for alert_id in gained:
            for fault in self.evidence.faults_of_alert.get(alert_id, ()):
                self.first_held.setdefault((fault.fault_id, report.incident_id), report.position)
                view = self.views[fault.fault_id]
                if view.detected_at is None:
                    view.detected_at = report.t
        concerned = self.evidence.faults_of_alerts(after.alert_ids)
        for fault in concerned:
            view = self.views[fault.fault_id]
            if view.located_at is None and located(fault, after.diagnosis):
                view.located_at = report.t
        changed = bool(gained) or before is None or before.diagnosis != after.diagnosis
        if concerned and changed and all(f.horizon < report.t for f in concerned):
            self.late += 1


def fault_views(evidence: Evidence) -> tuple[dict[str, FaultView], IncidentActivity]:
    """Each fault's view at its horizon, and the diagnostics of the agent's incident work."""
    judge = _Judge(evidence)
    pending = sorted(evidence.faults, key=lambda f: (f.horizon, f.rank))
    for report in evidence.reports:
        while pending and pending[0].horizon < report.t:
            judge.close(pending.pop(0))
        judge.apply(report)
    for fault in pending:
        judge.close(fault)
    activity = IncidentActivity(frozenset(judge.with_alerts), judge.late)
    return judge.views, activity
