"""How the model-based baselines show alerts and incidents to a model.

One rendering for all of them, so that ReAct, RAG and Keep-agent differ in what the paper says
they differ in (state, retrieval, who groups) and not in how an alert happens to be printed. Each
record is one line of JSON with sorted keys: a model reads it as easily as prose, and the order
and bytes are fixed, so the same history always makes the same request.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from string import Template
from typing import Any

from pytest_marathon.agents.labels import alert_id_of, alert_sort_key

#: Alert fields a model sees; everything the agent itself receives about an alert.
ALERT_FIELDS = ("alertname", "state", "fired_at", "resolved_at", "value", "labels")


def line(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(", ", ": "), default=str)


def alert_record(alert: Mapping[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"alert_id": alert_id_of(alert)}
    for key in ALERT_FIELDS:
        if alert.get(key) is not None:
            record[key] = alert[key]
    summary = (alert.get("annotations") or {}).get("summary")
    if summary:
        record["summary"] = summary
    return record


def render_alerts(alerts: Iterable[Mapping[str, Any]]) -> str:
    """The alerts, first fired first, one JSON line each; "(none)" for an empty history."""
    lines = [line(alert_record(a)) for a in sorted(alerts, key=alert_sort_key)]
    return "\n".join(lines) or "(none)"


def render_incidents(incidents: Iterable[Mapping[str, Any]]) -> str:
    """Incidents as stored by the agent (id, alert ids, status, root cause, repairs run), one JSON
    line each."""
    keys = ("incident_id", "alert_ids", "status", "root_cause", "repairs")
    lines = [line({k: inc[k] for k in keys if inc.get(k) is not None}) for inc in incidents]
    return "\n".join(lines) or "(none)"


def fill(template: str, **values: str) -> str:
    """A prompt template with `$name` placeholders (JSON braces in prompts need no escaping)."""
    return Template(template).substitute(values)
