"""Reading objects out of alert labels, the way the scorer attributes alerts.

Agents may not import the scorer, yet the runbook and keep-style baselines must name workloads
exactly as `scoring.attribution.workload_of` does (docs/internals.md, "Alert -> workload"), or
their incidents would be graded against a different reading of the same labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_marathon.vocabulary import WORKLOAD_LABELS, workload_of, workload_of_pod

__all__ = ["WORKLOAD_LABELS", "alert_id_of", "alert_sort_key", "workload_of", "workload_of_pod"]


def alert_sort_key(alert: Mapping[str, Any]) -> tuple[float, str]:
    """Deterministic processing order of alerts: first fired first, ties by id."""
    fired = alert.get("fired_at")
    return (float(fired) if fired is not None else float("inf"), alert_id_of(alert))


def alert_id_of(alert: Mapping[str, Any]) -> str:
    """An alert record's id; a record without one is a broken hand-off, not an alert to skip."""
    value = alert.get("alert_id")
    if value is None:
        raise ValueError(f"alert record without an id: {dict(alert)!r}")
    return str(value)
