"""Keep-style correlation over alert-history fixtures: the rule engine alone, no system."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytest_marathon.agents import keep_engine
from pytest_marathon.agents.labels import workload_of

RANKED = ("deployment", "service", "service_name", "pod", "http_route")
RULE_OF_LABEL = {
    "deployment": "by-deployment",
    "service": "by-service",
    "service_name": "by-service-name",
    "pod": "by-pod",
    "http_route": "by-route",
}
# Compiling CEL raises the recursion limit once; do it before hypothesis watches the limit.
SHIPPED_RULES = keep_engine.load_rules()


def alert(alert_id: str, fired_at: float, **labels: str) -> dict:
    return {
        "alert_id": alert_id,
        "alertname": "HighErrorRate",
        "labels": {"namespace": "boutique", **labels},
        "annotations": {},
        "state": "firing",
        "fired_at": fired_at,
        "resolved_at": None,
        "value": 1.0,
    }


label_values = st.sampled_from(["cartservice", "frontend", "cartservice-5d8f9c7b6a-x1y2z", "/cart"])
label_sets = st.dictionaries(st.sampled_from(RANKED), label_values, max_size=4)


@settings(max_examples=60, deadline=None)
@given(st.lists(label_sets, max_size=25))
def test_every_alert_joins_at_most_one_incident_by_its_top_ranked_label(label_list):
    rules = SHIPPED_RULES
    alerts = [alert(f"a{i}", 60.0 * i, **labels) for i, labels in enumerate(label_list)]
    store = keep_engine.empty_store()
    keep_engine.ingest(store, rules, alerts)

    placed = [a for inc in store["incidents"] for a in inc["alert_ids"]]
    assert len(placed) == len(set(placed))
    assert sorted(placed + store["unassigned"]) == sorted(a["alert_id"] for a in alerts)
    by_id = {a["alert_id"]: a for a in alerts}
    for inc in store["incidents"]:
        for alert_id in inc["alert_ids"]:
            labels = by_id[alert_id]["labels"]
            top = next(name for name in RANKED if name in labels)
            assert inc["fingerprint"] == labels[top]
            assert inc["rule"] == RULE_OF_LABEL[top]
    for alert_id in store["unassigned"]:
        assert not set(RANKED) & set(by_id[alert_id]["labels"])


def test_incident_stays_open_for_the_run_so_a_later_fault_joins_it():
    rules = SHIPPED_RULES
    store = keep_engine.empty_store()
    keep_engine.ingest(store, rules, [alert("a1", 100.0, deployment="cartservice")])
    keep_engine.ingest(store, rules, [alert("a2", 4000.0, deployment="cartservice")])
    assert [inc["alert_ids"] for inc in store["incidents"]] == [["a1", "a2"]]


def test_a_short_timeframe_starts_a_new_incident():
    rules = keep_engine.parse_rules(
        {"timeframe": 300, "rules": [{"name": "w", "cel": "has(labels.deployment)", "grouping": ["labels.deployment"]}]}
    )
    store = keep_engine.empty_store()
    alerts = [
        alert("a1", 0.0, deployment="cartservice"),
        alert("a2", 250.0, deployment="cartservice"),
        alert("a3", 600.0, deployment="cartservice"),
    ]
    keep_engine.ingest(store, rules, alerts)
    assert [inc["alert_ids"] for inc in store["incidents"]] == [["a1", "a2"], ["a3"]]


def test_each_alert_is_sent_once():
    rules = SHIPPED_RULES
    store = keep_engine.empty_store()
    history = [alert("a1", 0.0, service="frontend"), alert("a2", 30.0, route="x")]
    first = keep_engine.ingest(store, rules, history)
    again = keep_engine.ingest(store, rules, history)
    assert first == {"keep-0001"} and again == set()
    assert store["incidents"][0]["alert_ids"] == ["a1"]
    assert store["unassigned"] == ["a2"]


def test_pod_incident_names_the_pods_workload():
    rules = SHIPPED_RULES
    store = keep_engine.empty_store()
    keep_engine.ingest(store, rules, [alert("a1", 0.0, pod="cartservice-5d8f9c7b6a-x1y2z")])
    assert store["incidents"][0]["rule"] == "by-pod"
    assert store["incidents"][0]["workload"] == "cartservice"
    assert workload_of({"pod": "cartservice-5d8f9c7b6a-x1y2z"}) == "cartservice"


def test_condition_on_a_missing_field_does_not_apply_as_in_keep():
    rules = keep_engine.parse_rules(
        {
            "timeframe": 60,
            "rules": [{"name": "cart", "cel": 'labels.deployment == "cartservice"', "grouping": ["alertname"]}],
        }
    )
    store = keep_engine.empty_store()
    keep_engine.ingest(store, rules, [alert("a1", 0.0, service="frontend"), alert("a2", 0.0, deployment="cartservice")])
    assert store["unassigned"] == ["a1"]
    assert store["incidents"][0]["fingerprint"] == "HighErrorRate"


@pytest.mark.parametrize(
    "document, message",
    [
        ({"rules": []}, "timeframe"),
        ({"timeframe": 10, "rules": [{"name": "x", "cel": "has(labels.", "grouping": ["a"]}]}, "invalid CEL"),
        ({"timeframe": 10, "rules": [{"name": "x", "cel": "true", "grouping": []}]}, "grouping"),
        ({"timeframe": 10, "rules": [{"name": "x", "cel": "true", "grouping": ["a"], "extra": 1}]}, "exactly"),
    ],
)
def test_bad_rule_documents_are_refused_with_the_reason(document, message):
    with pytest.raises(ValueError, match=message):
        keep_engine.parse_rules(document, "rules.yaml")
