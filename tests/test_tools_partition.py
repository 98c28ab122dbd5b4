"""Incidents partition the alerts (ARCHITECTURE.md §7), checked through report_incidents.

Any sequence of report calls leaves every alert in at most one incident; the answer's `moves`
are exactly the alerts that changed incident; the `reports` stream, replayed record by record,
reproduces `session.incidents()`; a refused call changes nothing.
"""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_marathon.backends import create_backend
from pytest_marathon.interface import InProcessClient, ToolSession

ALERTS = [f"a{i}" for i in range(6)]
INCIDENTS = ["i1", "i2", "i3", "i4"]
RECORD_KEYS = {"t", "invocation", "seq", "moved_out", "item"}


@functools.cache
def _backend() -> Any:
    return create_backend("boutique", 4)  # reports never touch the backend: one twin serves all


def _session() -> tuple[ToolSession, InProcessClient, list[tuple[str, dict]]]:
    records: list[tuple[str, dict]] = []
    history = [{"alert_id": a, "alertname": "X", "labels": {}} for a in ALERTS]
    session = ToolSession(_backend(), alerts=lambda: history, sink=lambda s, r: records.append((s, r)))
    session.begin_invocation(1, 0.0)
    return session, InProcessClient(session), records


def _holders(incidents: list[dict]) -> dict[str, list[str]]:
    held: dict[str, list[str]] = {}
    for incident in incidents:
        for alert in incident["alert_ids"]:
            held.setdefault(alert, []).append(incident["incident_id"])
    return held


def _replayed(records: list[tuple[str, dict]]) -> list[dict]:
    state: dict[str, dict] = {}
    for stream, record in records:
        if stream == "reports":
            state[record["incident_id"]] = {k: v for k, v in record.items() if k not in RECORD_KEYS}
    return [state[key] for key in sorted(state)]


ITEM = st.fixed_dictionaries(
    {"incident_id": st.sampled_from(INCIDENTS)},
    optional={
        "alert_ids": st.lists(st.sampled_from(ALERTS), max_size=4),
        "status": st.sampled_from(["open", "mitigated", "resolved"]),
    },
)
CALLS = st.lists(st.lists(ITEM, min_size=1, max_size=3), min_size=1, max_size=8)


def _conflict(items: list[dict]) -> bool:
    """A call the interface must refuse: one incident twice, or one alert under two incidents."""
    ids = [item["incident_id"] for item in items]
    if len(set(ids)) < len(ids):
        return True
    claimed = [a for item in items for a in set(item.get("alert_ids", []))]
    return len(set(claimed)) < len(claimed)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(calls=CALLS)
def test_any_sequence_of_reports_keeps_every_alert_in_at_most_one_incident(calls):
    session, client, records = _session()
    for items in calls:
        before = session.incidents()
        answer = client.call("report_incidents", incidents=items)
        after = session.incidents()
        if _conflict(items):
            assert answer["verdict"] == "error" and "one call" in answer["error"], answer
            assert after == before
            continue
        assert "error" not in answer, answer
        held_before, held_after = _holders(before), _holders(after)
        assert all(len(holders) == 1 for holders in held_after.values()), after
        for item in items:  # an explicit alert set is what the incident holds afterwards
            if "alert_ids" in item:
                stored = next(i for i in after if i["incident_id"] == item["incident_id"])
                assert stored["alert_ids"] == sorted(set(item["alert_ids"]))
        expected_moves = sorted(
            ({"alert_id": a, "from": held_before[a][0], "to": held_after[a][0]}
             for a in held_after if a in held_before and held_before[a] != held_after[a]),
            key=lambda m: m["alert_id"],
        )
        assert answer["moves"] == expected_moves
        call_seq = records[-1][1]["seq"]
        this_call = [r for s, r in records if s == "reports" and r["seq"] == call_seq]
        for record in this_call:
            lost = sorted(m["alert_id"] for m in expected_moves if m["from"] == record["incident_id"])
            assert record.get("moved_out", []) == lost
        changed = {i["incident_id"] for i in after if i not in before}  # new or different state
        assert changed <= {r["incident_id"] for r in this_call}
        assert _replayed(records) == after


def test_reporting_an_alert_elsewhere_moves_it_and_records_the_loser():
    session, client, records = _session()
    client.call("report_incidents", incidents=[
        {"incident_id": "db", "alert_ids": ["a0", "a1", "a2"], "status": "open",
         "root_cause": {"culprits": ["redis-cart"], "artifact": "pod:redis-cart", "category": "infrastructure"}},
    ])
    answer = client.call("report_incidents", incidents=[{"incident_id": "cart", "alert_ids": ["a1", "a2", "a3"]}])
    assert answer["moves"] == [{"alert_id": "a1", "from": "db", "to": "cart"},
                               {"alert_id": "a2", "from": "db", "to": "cart"}]
    assert answer["incidents"] == [{"incident_id": "cart", "alert_ids": ["a1", "a2", "a3"], "status": "open",
                                    "root_cause": {"culprits": [], "artifact": "", "category": "", "text": ""}}]
    assert [(i["incident_id"], i["alert_ids"]) for i in session.incidents()] == [("cart", ["a1", "a2", "a3"]), ("db", ["a0"])]
    reports = [r for s, r in records if s == "reports"]
    call = [r for s, r in records if s == "tool_calls"][-1]
    loser = reports[-1]
    assert (loser["t"], loser["invocation"], loser["seq"]) == (call["t"], call["invocation"], call["seq"])
    assert loser["incident_id"] == "db" and loser["alert_ids"] == ["a0"] and loser["moved_out"] == ["a1", "a2"]
    assert loser["status"] == "open" and loser["root_cause"]["culprits"] == ["redis-cart"]  # the rest kept
    assert [r["incident_id"] for r in reports if r["seq"] == call["seq"]] == ["cart", "db"]
    assert "moved_out" not in reports[-2]


def test_an_incident_named_without_alert_ids_still_loses_what_another_claims():
    session, client, records = _session()
    client.call("report_incidents", incidents=[{"incident_id": "x", "alert_ids": ["a0", "a1"]}])
    answer = client.call("report_incidents", incidents=[
        {"incident_id": "x", "status": "mitigated"},
        {"incident_id": "y", "alert_ids": ["a1"]},
    ])
    assert answer["moves"] == [{"alert_id": "a1", "from": "x", "to": "y"}]
    assert answer["incidents"][0] == {**answer["incidents"][0], "alert_ids": ["a0"], "status": "mitigated", "moved_out": ["a1"]}
    assert [r["incident_id"] for s, r in records if s == "reports"] == ["x", "x", "y"]  # no extra loser record


def test_one_alert_under_two_incidents_of_one_call_is_refused_and_changes_nothing():
    session, client, records = _session()
    client.call("report_incidents", incidents=[{"incident_id": "x", "alert_ids": ["a0"]}])
    before, streams = session.incidents(), len(records)
    answer = client.call("report_incidents", incidents=[
        {"incident_id": "y", "alert_ids": ["a0", "a1"], "status": "resolved"},
        {"incident_id": "z", "alert_ids": ["a1"]},
    ])
    assert answer["verdict"] == "error"
    assert "'a1'" in answer["error"] and "'y'" in answer["error"] and "'z'" in answer["error"]
    assert session.incidents() == before
    assert [s for s, _ in records[streams:]] == ["tool_calls"]


def test_the_tool_description_teaches_the_partition():
    listing = {tool["name"]: tool["description"] for tool in _session()[1].list_tools()}
    assert "belongs to one incident" in listing["report_incidents"]
    assert "moves" in listing["report_incidents"]
