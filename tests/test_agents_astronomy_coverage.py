"""The rule-based baselines cover every shipped rule pack, the Astronomy Shop's included.

The runbook table has a row for every rule of every `pack/<app>.rules.yaml` (and none for a rule no
pack has); the runbook and keep-style agents act on the workloads the Astronomy Shop's own alerts
name (a Kafka consumer group's deployment, PostgreSQL, an HTTP service), with the table's action.
Alerts come from the astronomy pack evaluated on exporter-shaped series. The system behind the
tools is a recording stand-in that knows the application's deployments from its app.yaml (the
astronomy twin cannot run yet); it answers every action with success.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from pytest_marathon.agents.keep_style import KeepStyleAgent
from pytest_marathon.agents.protocol import InvocationContext
from pytest_marathon.agents.remedy_table import load_table
from pytest_marathon.agents.runbook import RunbookAgent

from pytest_marathon.alerting import AlertEngine, load_rule_pack
from pytest_marathon.alerting.rules import available_packs
from pytest_marathon.tsdb import SeriesStore
from pytest_marathon.twin.appspec import APPS_DIR

NS = "astronomy"
STEP = 15.0
BREAK = 300.0
END = 720.0
ACTS = {"rollback_service": "rollback", "restart_service": "restart", "scale_service": "scale_up"}


def test_every_rule_of_every_pack_has_its_own_runbook_row() -> None:
    table = load_table()
    rules = {rule.name for app in available_packs() for rule in load_rule_pack(app).rules}
    assert sorted(r for r in rules if not table.covers(r)) == []
    assert sorted(row.rule for row in table.rows if row.rule not in rules) == []


@pytest.mark.parametrize(
    ("rule", "action"),
    [("KafkaConsumerLagHigh", "restart"), ("KafkaConsumerGroupNoMembers", "scale_up"),
     ("PostgresDown", "restart"), ("HttpServerErrorRatioHigh", "rollback")],
)
def test_the_astronomy_rules_take_the_action_their_object_needs(rule: str, action: str) -> None:
    assert load_table().row_for(rule).action == action


def _astronomy_alerts() -> list[dict[str, Any]]:
    """From BREAK: accounting stops consuming, fraud-detection's group empties (scaled to zero),
    PostgreSQL is down and shipping answers 500 to every quote."""
    store = SeriesStore()
    engine = AlertEngine(load_rule_pack("astronomy"), store, NS)
    calls: dict[tuple, float] = {}
    t = 0.0
    while t <= END:
        broken = t >= BREAK
        lag = (t - BREAK) // STEP + 1 if broken else 0.0
        store.append("kafka_consumer_group_lag_sum", {"group": "accounting", "topic": "orders"}, t, lag)
        store.append("kafka_consumer_group_members", {"group": "accounting"}, t, 2.0)
        store.append("kafka_consumer_group_members", {"group": "fraud-detection"}, t, 0.0 if broken else 2.0)
        store.append("pg_up", {"namespace": NS, "job": "postgres_exporter", "instance": "postgresql:5432"}, t,
                     0.0 if broken else 1.0)
        for status in ("200", "500"):
            labels = {"job": "shipping", "service_name": "shipping", "span_name": "POST /get-quote",
                      "span_kind": "SPAN_KIND_SERVER", "http_request_method": "POST",
                      "http_response_status_code": status,
                      "status_code": "STATUS_CODE_ERROR" if status == "500" else "STATUS_CODE_UNSET"}
            key = tuple(sorted(labels.items()))
            calls[key] = calls.get(key, 0.0) + (1.0 if (status == "500") == broken else 0.0) * STEP
            store.append("traces_span_metrics_calls_total", labels, t, calls[key])
        engine.evaluate(t)
        t += STEP
    assert engine.errors == []
    return engine.history()


class _Astronomy:
    """Records the agents' tool calls; deployments from the app.yaml, all with 2 replicas except
    fraud-detection (scaled to zero)."""

    def __init__(self) -> None:
        spec = yaml.safe_load((APPS_DIR / "astronomy" / "app.yaml").read_text(encoding="utf-8"))
        self.deployments = sorted(spec["deployments"])
        self.actions: list[tuple[str, str]] = []
        self.reported: list[dict[str, Any]] = []

    def call(self, tool: str, /, **args: Any) -> dict[str, Any]:
        if tool == "get_resources":
            if "name" in args:
                replicas = 0 if args["name"] == "fraud-detection" else 2
                return {"object": {"metadata": {"name": args["name"]}, "spec": {"replicas": replicas}}}
            return {"items": [{"name": name} for name in self.deployments]}
        if tool == "report_incidents":
            self.reported.extend(args["incidents"])
            return {"ok": True}
        if tool in ACTS:
            self.actions.append((ACTS[tool], args["service"]))
            return {"ok": True, "replicas": args.get("replicas")}
        return {"error": f"unexpected tool {tool}"}

    def list_tools(self) -> list[dict[str, Any]]:
        return []


EXPECTED = {("restart", "accounting"), ("scale_up", "fraud-detection"), ("restart", "postgresql"),
            ("rollback", "shipping")}


@pytest.mark.parametrize("agent", [RunbookAgent, KeepStyleAgent])
def test_the_baselines_act_on_what_the_astronomy_alerts_name(agent: type, tmp_path: Path) -> None:
    alerts = _astronomy_alerts()
    names = {a["alertname"] for a in alerts}
    assert {"KafkaConsumerLagHigh", "KafkaConsumerGroupNoMembers", "PostgresDown", "HttpServerErrorRatioHigh"} <= names
    tools = _Astronomy()
    ctx = InvocationContext(n=1, t=END, alerts=alerts, tools=tools, workspace=tmp_path, budget_s=60.0,
                            deadline=time.monotonic() + 60.0)
    agent().invoke(ctx)
    assert set(tools.actions) == EXPECTED
    assert len(tools.actions) == len(EXPECTED)  # one action per workload
    culprits = {c for entry in tools.reported for c in entry["root_cause"]["culprits"]}
    assert culprits == {workload for _, workload in EXPECTED}
