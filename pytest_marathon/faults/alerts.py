"""The alert stream admission judges a fault by: the shipped rule pack evaluated on the backend.

Admission asks whether an alert attributable to the fault fires, using the same reading of
"attributable" as the scorer (docs/internals.md, Alert -> workload): the workload an alert names
is the first present of `deployment`, `service`, `service_name`, `container`, then `pod` with
its two generated suffixes stripped.
"""

from __future__ import annotations

from typing import Any

from pytest_marathon.alerting.engine import AlertEngine
from pytest_marathon.alerting.rules import load_rule_pack
from pytest_marathon.backends.base import Backend
from pytest_marathon.vocabulary import workload_of


class AlertWatcher:
    """Evaluates the app's rule pack every time it is asked and keeps the firing events."""

    def __init__(self, backend: Backend) -> None:
        if backend.store is None:
            raise ValueError("admission needs a backend with a series store (the twin)")
        self.namespace = backend.namespace
        self.engine = AlertEngine(load_rule_pack(backend.app), backend.store, backend.namespace)
        self.firing: list[dict[str, Any]] = []

    def evaluate(self, t: float) -> None:
        for event in self.engine.evaluate(t):
            if event.get("event") == "firing":
                self.firing.append(event)

    def _fired(self, since: float, until: float) -> list[dict[str, Any]]:
        return [
            e
            for e in self.firing
            if since <= float(e.get("fired_at", e["t"])) <= until
            and e.get("labels", {}).get("namespace", self.namespace) == self.namespace
        ]

    def workloads_fired(self, since: float, until: float) -> set[str]:
        named = (workload_of(e.get("labels", {})) for e in self._fired(since, until))
        return {w for w in named if w}

    def names_fired(self, since: float, until: float) -> list[str]:
        return sorted(
            {
                f"{e['alertname']}({workload_of(e.get('labels', {})) or '-'})"
                for e in self._fired(since, until)
            }
        )
