"""Keep's correlation semantics, run inside the agent's process.

Keep (keephq/keep) groups alerts with rules made of a CEL condition, grouping criteria (dotted
paths into the alert) and a timeframe: an alert a rule's condition accepts joins the incident of
(rule, values of the grouping criteria) unless that incident's last alert is older than the
timeframe, in which case a new incident starts. As in Keep, a condition that touches a missing
field is simply false, and an alert whose grouping values are missing does not join. The store is
plain JSON so it survives between invocations in the workspace; each alert is sent to it once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import celpy
import yaml
from pytest_marathon.agents.labels import alert_id_of, alert_sort_key, workload_of


def cel_activation(alert: Mapping[str, Any]) -> Any:
    """The alert as CEL sees it: `alertname`, `labels`, `annotations`, `state`, `value`, times."""
    payload = {
        "alertname": str(alert.get("alertname", "")),
        "labels": {str(k): str(v) for k, v in (alert.get("labels") or {}).items()},
        "annotations": {str(k): str(v) for k, v in (alert.get("annotations") or {}).items()},
        "state": str(alert.get("state", "")),
        "value": float(alert.get("value") or 0.0),
        "fired_at": float(alert.get("fired_at") or 0.0),
    }
    return celpy.json_to_cel(payload)


@dataclass(frozen=True)
class KeepRule:
    name: str
    cel: str
    grouping: tuple[str, ...]
    program: Any

    def matches(self, alert: Mapping[str, Any]) -> bool:
        try:
            return bool(self.program.evaluate(cel_activation(alert)))
        except celpy.CELEvalError:
            return False  # Keep: a condition over a field the alert lacks does not apply

    def fingerprint(self, alert: Mapping[str, Any]) -> str | None:
        """Comma-joined grouping values; None when one is missing (Keep's "none" group)."""
        values = []
        for path in self.grouping:
            node: Any = alert
            for part in path.split("."):
                node = node.get(part) if isinstance(node, Mapping) else None
            if node is None or node == "":
                return None
            values.append(str(node))
        return ",".join(values)


@dataclass(frozen=True)
class KeepRuleSet:
    rules: tuple[KeepRule, ...]
    timeframe: float

    def place(self, alert: Mapping[str, Any]) -> tuple[KeepRule, str] | None:
        """The first rule that accepts the alert and its group fingerprint, if any."""
        for rule in self.rules:
            if rule.matches(alert):
                fingerprint = rule.fingerprint(alert)
                if fingerprint is not None:
                    return rule, fingerprint
        return None


def parse_rules(data: Any, source: str = "<rules>") -> KeepRuleSet:
    """Validate and compile a rules document; errors name the file and the rule."""
    if not isinstance(data, Mapping) or not isinstance(data.get("rules"), list):
        raise ValueError(f"{source}: expected a mapping with a 'rules' list")
    timeframe = data.get("timeframe")
    if not isinstance(timeframe, int | float) or timeframe <= 0:
        raise ValueError(f"{source}: 'timeframe' must be a positive number of seconds")
    env = celpy.Environment()
    rules: list[KeepRule] = []
    for i, raw in enumerate(data["rules"]):
        where = f"{source} rules[{i}]"
        if not isinstance(raw, Mapping) or set(raw) - {"name", "cel", "grouping"}:
            raise ValueError(f"{where}: a rule has exactly 'name', 'cel' and 'grouping'")
        name, cel, grouping = raw.get("name"), raw.get("cel"), raw.get("grouping")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{where}: 'name' must be a non-empty string")
        if not isinstance(cel, str) or not cel.strip():
            raise ValueError(f"{where} ({name}): 'cel' must be a CEL expression")
        if not isinstance(grouping, list) or not grouping or not all(isinstance(g, str) for g in grouping):
            raise ValueError(f"{where} ({name}): 'grouping' must be a non-empty list of field paths")
        try:
            program = env.program(env.compile(cel))
        except celpy.CELParseError as exc:
            raise ValueError(f"{where} ({name}): invalid CEL {cel!r}: {exc}") from exc
        rules.append(KeepRule(name, cel, tuple(grouping), program))
    names = [r.name for r in rules]
    if len(set(names)) != len(names):
        raise ValueError(f"{source}: rule names must be unique")
    return KeepRuleSet(tuple(rules), float(timeframe))


def load_rules(path: Path | None = None) -> KeepRuleSet:
    if path is None:
        text = resources.files("pytest_marathon.agents").joinpath("keep_rules.yaml").read_text("utf-8")
        return parse_rules(yaml.safe_load(text), "keep_rules.yaml")
    return parse_rules(yaml.safe_load(Path(path).read_text(encoding="utf-8")), str(path))


def empty_store() -> dict[str, Any]:
    return {"incidents": [], "sent": [], "unassigned": [], "next": 1}


def ingest(store: dict[str, Any], rules: KeepRuleSet, alerts: Sequence[Mapping[str, Any]]) -> set[str]:
    """Send every alert not sent before through the rules; returns the incidents that grew."""
    sent = set(store["sent"])
    touched: set[str] = set()
    for alert in sorted(alerts, key=alert_sort_key):
        alert_id = alert_id_of(alert)
        if alert_id in sent:
            continue
        sent.add(alert_id)
        store["sent"].append(alert_id)
        placed = rules.place(alert)
        if placed is None:
            store["unassigned"].append(alert_id)
            continue
        rule, fingerprint = placed
        fired_at = float(alert.get("fired_at") or 0.0)
        incident = _open_incident(store, rule.name, fingerprint, fired_at, rules.timeframe)
        if incident is None:
            incident = {
                "incident_id": f"keep-{store['next']:04d}",
                "rule": rule.name,
                "fingerprint": fingerprint,
                "workload": workload_of(alert.get("labels") or {}),
                "alert_ids": [],
                "first_at": fired_at,
                "last_at": fired_at,
            }
            store["next"] += 1
            store["incidents"].append(incident)
        incident["alert_ids"].append(alert_id)
        incident["last_at"] = max(incident["last_at"], fired_at)
        touched.add(incident["incident_id"])
    return touched


def _open_incident(
    store: Mapping[str, Any], rule: str, fingerprint: str, fired_at: float, timeframe: float
) -> dict[str, Any] | None:
    for incident in reversed(store["incidents"]):
        if incident["rule"] == rule and incident["fingerprint"] == fingerprint:
            return incident if fired_at - incident["last_at"] <= timeframe else None
    return None
