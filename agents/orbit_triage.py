"""Orbit's model-free half: merging the alert batch into incidents and publishing the mapping.

Paper, Appendix G, Orbit: "The alert batch is merged deterministically, one incident and one
agenda task per signal, and the complete alert-to-incident mapping is published before the model
is consulted, so what Correlated grades never depends on the model finishing."

A *signal* is the workload an alert's labels name (read as the scorer reads them,
`agents.labels.workload_of`); an alert that names no workload has its rule name (`alertname`) as
its signal. Each signal has at most one open incident: a new alert joins it, or opens a new
incident and a new agenda task when there is none. Alerts are taken oldest first, ties by id, so
the same history always gives the same incidents and ids.

An incident is *validated green* when every alert it holds has resolved: it is closed with status
`resolved`, and a later alert of its signal opens a new incident. Every open incident carries at
least a tentative root cause: the Runbook's rule table (`runbook_table.yaml`) read as a prior, so
Located never depends on the model either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_marathon.agents.labels import alert_id_of, alert_sort_key, workload_of
from pytest_marathon.agents.orbit_state import OrbitState
from pytest_marathon.agents.protocol import ToolClient
from pytest_marathon.agents.remedy_table import RemedyTable
from pytest_marathon.agents.tooling import report_incidents

REPORT_BATCH = 50  # report_incidents takes at most 50 incidents per call


def signal_of(alert: Mapping[str, Any], workloads: set[str] | None) -> tuple[str, str | None]:
    """(signal, workload): the workload the labels name (when it is one of the application's),
    else the alert's rule name with no workload."""
    workload = workload_of(alert.get("labels") or {})
    if workload is not None and (workloads is None or workload in workloads):
        return f"workload:{workload}", workload
    return f"alertname:{alert.get('alertname') or 'unnamed'}", None


def merge_batch(
    state: OrbitState, alerts: Sequence[Mapping[str, Any]], t: float, workloads: set[str] | None
) -> set[str]:
    """File every alert not placed before; returns the ids of incidents that changed."""
    changed: set[str] = set()
    open_by_signal = {i["signal"]: i for i in state.open_incidents()}
    for alert in sorted(alerts, key=alert_sort_key):
        alert_id = alert_id_of(alert)
        if alert_id in state.assigned:
            continue
        signal, workload = signal_of(alert, workloads)
        incident = open_by_signal.get(signal)
        if incident is None:
            incident = {
                "incident_id": state.next_id("incident", "orb"),
                "signal": signal,
                "workload": workload,
                "alert_ids": [],
                "status": "open",
                "opened_at": t,
                "root_cause": None,
                "diagnosed": False,
                "actions": [],
            }
            state.incidents.append(incident)
            open_by_signal[signal] = incident
            state.agenda.append(
                {
                    "task": state.next_id("task", "task"),
                    "incident": incident["incident_id"],
                    "goal": f"find the cause of {signal} and repair it",
                    "state": "open",
                }
            )
        incident["alert_ids"].append(alert_id)
        state.assigned[alert_id] = incident["incident_id"]
        changed.add(incident["incident_id"])
    return changed


def validate_green(state: OrbitState, alerts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Close each open incident whose alerts have all resolved; returns the closed incidents."""
    states = {alert_id_of(a): a.get("state") for a in alerts}
    closed = []
    for incident in state.open_incidents():
        ids = incident["alert_ids"]
        if ids and all(states.get(a) == "resolved" for a in ids):
            incident.update(closed=True, status="resolved", green=True)
            for task in state.agenda:
                if task["incident"] == incident["incident_id"] and task["state"] == "open":
                    task["state"] = "done"
            closed.append(incident)
    return closed


def tentative_root_cause(
    incident: Mapping[str, Any], alerts: Mapping[str, Mapping[str, Any]], table: RemedyTable
) -> dict[str, Any]:
    """The rule table's reading of the incident's alerts, marked tentative in its text."""
    names = sorted({str(alerts[a].get("alertname", "")) for a in incident["alert_ids"] if a in alerts})
    row = table.choose(names)
    workload = incident.get("workload")
    return {
        "culprits": [workload] if workload else [],
        "artifact": row.artifact(workload) if workload else "",
        "category": row.category,
        "text": f"tentative (rule table, {row.rule}): {', '.join(names) or 'no alerts'}",
    }


def ensure_root_causes(
    state: OrbitState, alerts: Sequence[Mapping[str, Any]], table: RemedyTable
) -> set[str]:
    """Give every open incident without one a tentative root cause; returns those changed."""
    by_id = {alert_id_of(a): a for a in alerts}
    changed = set()
    for incident in state.open_incidents():
        if not incident.get("root_cause"):
            incident["root_cause"] = tentative_root_cause(incident, by_id, table)
            changed.add(incident["incident_id"])
    return changed


def report_entry(incident: Mapping[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "incident_id": incident["incident_id"],
        "alert_ids": list(incident["alert_ids"]),
        "status": incident["status"],
    }
    if incident.get("root_cause"):
        entry["root_cause"] = dict(incident["root_cause"])
    return entry


def publish(tools: ToolClient, incidents: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Report incidents in batches the tool accepts; returns the error of each one refused."""
    entries = [report_entry(i) for i in sorted(incidents, key=lambda i: i["incident_id"])]
    failed: dict[str, str] = {}
    for start in range(0, len(entries), REPORT_BATCH):
        failed.update(report_incidents(tools, entries[start : start + REPORT_BATCH]))
    return failed
