"""The oracle files each alert under one fault's incident (incidents partition the alerts)."""

from __future__ import annotations

from pytest_marathon.agents.oracle import partition_alerts

FAULTS = [{"fault_id": "f01"}, {"fault_id": "f02"}, {"fault_id": "f03"}]


def test_every_alert_has_one_owner_among_the_faults_it_is_attributable_to():
    alerts_of = {"f01": ["a", "b", "c"], "f02": ["b", "c", "d"], "f03": []}
    owner = partition_alerts(FAULTS, alerts_of, {})
    assert set(owner) == {"a", "b", "c", "d"}
    assert all(fault in [f for f, alerts in alerts_of.items() if alert in alerts] for alert, fault in owner.items())


def test_a_shared_alert_goes_to_the_oldest_fault_and_stays_where_it_was():
    # the scorer's matching serves faults in injection order, each taking the incident that first
    # held one of its alerts: a shared alert filed under the older fault keeps every fault's first
    # holder its own incident
    assert partition_alerts(FAULTS, {"f01": ["a", "x"], "f02": ["x", "y"], "f03": []}, {})["x"] == "f01"
    alerts_of = {"f01": ["a", "x"], "f02": ["x"], "f03": []}
    assert partition_alerts(FAULTS, alerts_of, {}) == {"a": "f01", "x": "f02"}
    assert partition_alerts(FAULTS, alerts_of, {"x": "f01"})["x"] == "f02"  # f02 would hold nothing
    alerts_of = {"f01": ["a", "x"], "f02": ["x", "y"], "f03": []}
    assert partition_alerts(FAULTS, alerts_of, {"x": "f01"}) == {"a": "f01", "x": "f01", "y": "f02"}


def test_a_fault_holding_nothing_takes_an_alert_from_one_holding_several():
    alerts_of = {"f01": ["a", "b"], "f02": ["b", "c"], "f03": ["a"]}
    owner = partition_alerts(FAULTS, alerts_of, {"a": "f01", "b": "f01", "c": "f02"})
    held = {f: sorted(a for a, o in owner.items() if o == f) for f in ("f01", "f02", "f03")}
    assert all(held.values()), held  # every fault that can be correlated holds an alert
    assert held == {"f01": ["b"], "f02": ["c"], "f03": ["a"]}


def test_a_fault_whose_only_alert_another_needs_stays_empty():
    alerts_of = {"f01": ["x"], "f02": ["x"], "f03": []}
    owner = partition_alerts(FAULTS, alerts_of, {})
    assert owner == {"x": "f01"}
