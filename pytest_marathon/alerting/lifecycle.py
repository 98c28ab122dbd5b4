"""The Prometheus alert state machine of one rule.

Mirrors `AlertingRule.Eval` of Prometheus (2.42+): a label set returned by the expression becomes
pending at its first evaluation, firing once it has been active for `for`, and inactive
(resolved) at the first evaluation that no longer returns it — unless `keep_firing_for` holds a
firing alert a while longer. A label set that fires again after resolving is a new instance with
a new id. Only firing/resolved transitions leave this module; pending is internal.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

from pytest_marathon.alerting.rules import Rule

AlertLabels = tuple[tuple[str, str], ...]


def alert_id(alertname: str, labels: AlertLabels, fired_at: float) -> str:
    """Stable id of one alert instance: same rule, label set and firing time, same id."""
    text = json.dumps([alertname, list(labels), round(fired_at, 6)], separators=(",", ":"))
    return "a-" + hashlib.sha256(text.encode()).hexdigest()[:10]


def record_value(value: float) -> float | str:
    """A sample value as written to bundles: rounded, or Prometheus' text for non-finite."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return round(value, 6)


@dataclass
class AlertInstance:
    """One alert instance of one rule and label set, from pending to resolved."""

    alertname: str
    labels: AlertLabels
    annotations: dict[str, str]
    value: float
    active_at: float
    state: str = "pending"
    fired_at: float | None = None
    resolved_at: float | None = None
    keep_firing_since: float | None = None
    id: str = ""

    def summary(self) -> dict[str, Any]:
        """The entry agents see in the alert history."""
        return {
            "alert_id": self.id,
            "alertname": self.alertname,
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "state": "firing" if self.state == "firing" else "resolved",
            "active_at": self.active_at,
            "fired_at": self.fired_at,
            "resolved_at": self.resolved_at,
            "value": record_value(self.value),
        }

    def event(self, t: float, kind: str) -> dict[str, Any]:
        """A bundle `alerts.jsonl` record of a state change."""
        return {
            "t": t,
            "event": kind,
            "alert_id": self.id,
            "alertname": self.alertname,
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "value": record_value(self.value),
            "active_at": self.active_at,
            "fired_at": self.fired_at,
        }


class RuleState:
    """The active alerts of one rule, advanced one evaluation at a time."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.active: dict[AlertLabels, AlertInstance] = {}

    def advance(
        self, t: float, results: dict[AlertLabels, tuple[float, dict[str, str]]]
    ) -> list[tuple[str, AlertInstance]]:
        """Apply one evaluation's results (alert labels -> value, annotations); return the
        (firing|resolved, instance) transitions, in label order."""
        rule = self.rule
        for labels, (value, rendered) in results.items():
            alert = self.active.get(labels)
            if alert is not None and alert.state != "inactive":
                alert.value = value
                alert.annotations = rendered
            else:
                self.active[labels] = AlertInstance(
                    rule.name, labels, rendered, value, active_at=t
                )
        changes: list[tuple[str, AlertInstance]] = []
        for labels in sorted(self.active):
            alert = self.active[labels]
            if labels not in results:
                keep_firing = False
                if alert.state == "firing" and rule.keep_firing_for > 0:
                    if alert.keep_firing_since is None:
                        alert.keep_firing_since = t
                    keep_firing = t - alert.keep_firing_since < rule.keep_firing_for
                if alert.state == "pending":
                    del self.active[labels]
                    continue
                if not keep_firing:
                    if alert.state == "firing":
                        alert.state = "inactive"
                        alert.resolved_at = t
                        changes.append(("resolved", alert))
                    del self.active[labels]
                    continue
            else:
                alert.keep_firing_since = None
            if alert.state == "pending" and t - alert.active_at >= rule.for_:
                alert.state = "firing"
                alert.fired_at = t
                alert.id = alert_id(rule.name, labels, t)
                changes.append(("firing", alert))
        return changes
