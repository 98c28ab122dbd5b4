"""`/api/v1/rules` and `/api/v1/alerts`: the app's rule pack and its alert state.

The state comes from the project's `AlertEngine`. A caller that already evaluates the pack (the
marathon runner) passes its engine and the API only reads it; otherwise the API owns an engine
and, before answering, evaluates it at every interval boundary from where it stopped up to the
twin's current time. Evaluating late is exact: an evaluation at t reads only samples at or
before t, which no later growth of the store changes, so the pending/firing states are those a
Prometheus scraping the twin live would have reached.

Shapes follow upstream prometheus/prometheus web/api/v1/api.go (`RuleDiscovery`, `RuleGroup`,
`AlertingRule`, `Alert`, `rulesAlertsToAPIAlerts`: an alert's `value` in Go's 'e' format, a
rule's state the highest of its alerts', health "unknown" until the first evaluation).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_marathon.alerting import AlertEngine, load_rule_pack
from pytest_marathon.alerting.lifecycle import AlertInstance, RuleState
from pytest_marathon.apiserver.prom_format import go_exponent, invalid_param, rfc3339
from pytest_marathon.backends.base import Backend

# Go's zero time.Time, what Prometheus reports as `lastEvaluation` before the first one.
ZERO_TIME = "0001-01-01T00:00:00Z"
_RANK = {"inactive": 0, "pending": 1, "firing": 2}


class AlertState:
    """The alert engine behind the API, evaluated up to the twin's time on demand."""

    def __init__(self, backend: Backend, app: str, engine: AlertEngine | None = None) -> None:
        self._backend = backend
        self._owned = engine is None
        if engine is None:
            if backend.store is None:
                raise ValueError("the Prometheus API needs a backend with a series store")
            engine = AlertEngine(load_rule_pack(app), backend.store, backend.namespace)
        self.engine = engine
        self._next: float | None = None
        self._duration = 0.0

    def catch_up(self) -> None:
        """Evaluate an owned engine at each interval boundary up to the twin's `now`."""
        if not self._owned:
            return
        now = float(self._backend.now)
        interval = self.engine.interval
        if self._next is None:
            self._next = (math.floor(self._first_time(now) / interval) + 1) * interval
        while self._next <= now:
            began = time.perf_counter()
            self.engine.evaluate(self._next)
            self._duration = time.perf_counter() - began
            self._next += interval

    def _first_time(self, now: float) -> float:
        """Where the store's data begins (the twin's start), or now for an empty store."""
        store = self._backend.store
        starts = [s.times[0] for s in store or () if len(s.times)]
        return min(starts, default=now)

    # ------------------------------------------------------------------------------------------
    def alerts(self) -> dict[str, Any]:
        return {"alerts": [_alert(a) for state in self.engine.rule_states for a in _active(state)]}

    def rules(self, params: Mapping[str, Sequence[str]] | None = None) -> dict[str, Any]:
        """Groups and rules, filtered as upstream by `type`, `rule_name[]`, `rule_group[]`,
        `file[]`; `exclude_alerts` leaves the alerts out (a group left empty is omitted)."""
        params = params or {}
        kind = (params.get("type") or [""])[0].lower()
        if kind not in ("", "alert", "record"):
            raise invalid_param("type", f'not supported value "{kind}"')
        exclude = _parse_bool((params.get("exclude_alerts") or [""])[0].lower())
        names, groups_wanted, files = (
            set(params.get(key, ())) for key in ("rule_name[]", "rule_group[]", "file[]")
        )
        engine = self.engine
        last = engine.last_evaluation
        failed = {e["alertname"]: e["error"] for e in engine.errors if e["t"] == last}
        groups: dict[str, dict[str, Any]] = {}
        for state in engine.rule_states:
            rule = state.rule
            if (
                kind == "record"  # the pack has alerting rules only
                or (names and rule.name not in names)
                or (groups_wanted and rule.group not in groups_wanted)
                or (files and engine.pack.source not in files)
            ):
                continue
            group = groups.setdefault(rule.group, {
                "name": rule.group,
                "file": engine.pack.source,
                "rules": [],
                "interval": rule.interval,
                "limit": 0,
                "evaluationTime": self._duration,
                "lastEvaluation": ZERO_TIME if last is None else rfc3339(last),
            })
            active = _active(state)
            health = "unknown" if last is None else ("err" if rule.name in failed else "ok")
            entry: dict[str, Any] = {
                "state": max((a.state for a in active), key=_RANK.__getitem__, default="inactive"),
                "name": rule.name,
                "query": rule.expr.strip(),
                "duration": rule.for_,
                "keepFiringFor": rule.keep_firing_for,
                "labels": dict(rule.labels),
                "annotations": dict(rule.annotations),
                "alerts": None if exclude else [_alert(a) for a in active],  # upstream: null
                "health": health,
                "evaluationTime": 0,
                "lastEvaluation": ZERO_TIME if last is None else rfc3339(last),
                "type": "alerting",
            }
            if rule.name in failed:
                entry["lastError"] = failed[rule.name]
            group["rules"].append(entry)
        return {"groups": list(groups.values())}


def _parse_bool(text: str) -> bool:
    """web/api/v1/api.go parseExcludeAlerts: Go's strconv.ParseBool of the lowered value."""
    if text in ("", "0", "f", "false"):
        return False
    if text in ("1", "t", "true"):
        return True
    raise invalid_param(
        "exclude_alerts",
        f'error converting exclude_alerts: strconv.ParseBool: parsing "{text}": invalid syntax',
    )


def _active(state: RuleState) -> list[AlertInstance]:
    """The rule's pending and firing alerts (resolved ones leave `active` at once)."""
    return [state.active[k] for k in sorted(state.active) if state.active[k].state != "inactive"]


def _alert(alert: AlertInstance) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "labels": dict(alert.labels),
        "annotations": dict(alert.annotations),
        "state": alert.state,
        "activeAt": rfc3339(alert.active_at),
        "value": go_exponent(alert.value),
    }
    if alert.keep_firing_since is not None:
        entry["keepFiringSince"] = rfc3339(alert.keep_firing_since)
    return entry
