"""Two zones, HTTP between services and flagd, on the two-zone fixture app (tests/fixtures/apps/
twozone): one replica per zone, Services that prefer the caller's zone (Kubernetes
`trafficDistribution: PreferClose`) and fall over to the other zone, 25 ms one way between zones."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_marathon.backends.base import BackendError
from pytest_marathon.twin.engine import Twin

APPS = Path(__file__).parent / "fixtures" / "apps"
COMPONENTS = ("edge", "web", "prices")


def _twin(t: float = 30.0) -> Twin:
    twin = Twin("twozone", seed=3, apps_dir=APPS)
    twin.advance_to(t)
    return twin


def _zone(twin: Twin, pod_name: str) -> str:
    pod = twin.cluster.pods[pod_name]
    return twin.cluster.nodes[pod.node].zone


def _remove(twin: Twin, deployment: str, zone: str) -> None:
    """The deployment's pod in `zone` is gone and stays gone (its ReplicaSet wants one fewer)."""
    for pod in list(twin.cluster.pods.values()):
        if pod.deployment == deployment and _zone(twin, pod.name) == zone:
            pod.ready = False


def _price(twin: Twin, item: str = "apple") -> tuple[int, object, list[dict]]:
    request = {"method": "GET", "path": f"/price/{item}", "query": {}, "body": None, "headers": {}, "params": {}}
    outcome, trace = twin.runtime.entry("http", request, twin.now, "t-1", "0" * 32)
    return outcome.status, outcome.response, trace.spans


def test_every_component_runs_one_replica_in_each_zone():
    twin = _twin()
    for name in (*COMPONENTS, "flagd"):
        zones = sorted(_zone(twin, p.name) for p in twin.cluster.pods_of(name))
        assert zones == ["zone-a", "zone-b"], name
        node = twin.resources("nodes")[0]["metadata"]["labels"]
        assert "topology.kubernetes.io/zone" in node


def test_the_load_is_served_by_the_active_zone_alone():
    twin = _twin(120.0)
    traces = twin.traces(limit=20)
    assert traces
    for summary in traces:
        for span in twin.trace(summary["trace_id"])["spans"]:
            assert _zone(twin, span["pod"]) == "zone-a", span


def test_a_dead_active_web_fails_over_to_the_standby_with_the_crossing_in_the_trace():
    twin = _twin()
    status, body, spans = _price(twin)
    healthy = next(s for s in spans if s["service"] == "edge" and s["kind"] == "SPAN_KIND_CLIENT")
    assert status == 200 and body == {"item": "apple", "cents": 120}
    _remove(twin, "web", "zone-a")
    status, body, spans = _price(twin)
    assert status == 200 and body == {"item": "apple", "cents": 120}
    web = next(s for s in spans if s["service"] == "web" and s["kind"] == "SPAN_KIND_SERVER")
    assert _zone(twin, web["pod"]) == "zone-b"
    # the standby web calls its own zone's prices: only the edge -> web hop crosses, both ways
    prices = next(s for s in spans if s["service"] == "prices")
    assert _zone(twin, prices["pod"]) == "zone-b"
    crossing = next(s for s in spans if s["service"] == "edge" and s["kind"] == "SPAN_KIND_CLIENT")
    assert crossing["duration_ms"] - healthy["duration_ms"] == pytest.approx(50.0, abs=5.0)


def test_no_ready_web_anywhere_is_the_proxys_503_with_envoys_words():
    twin = _twin()
    _remove(twin, "web", "zone-a")
    _remove(twin, "web", "zone-b")
    status, body, spans = _price(twin)
    assert status == 503
    assert body.startswith("upstream connect error or disconnect/reset before headers")
    client = next(s for s in spans if s["kind"] == "SPAN_KIND_CLIENT")
    assert client["status"] == "STATUS_CODE_ERROR" and "http.response.status_code" not in client["attributes"]


def test_an_unknown_path_is_the_services_404_without_a_handler():
    twin = _twin()
    request = {"method": "GET", "path": "/nothing/here", "query": {}, "body": None, "headers": {}, "params": {}}
    outcome, trace = twin.runtime.entry("http", request, twin.now, "t-2", "1" * 32)
    assert outcome.status == 404
    assert [s for s in trace.spans if s["service"] == "web"] == []


def test_flags_come_from_flagd_and_default_when_no_flagd_answers():
    twin = _twin()
    twin.set_feature_flag("discount", "on")
    assert _price(twin)[1]["cents"] == 108
    _remove(twin, "flagd", "zone-a")
    assert _price(twin)[1]["cents"] == 108  # the standby zone's flagd answers
    _remove(twin, "flagd", "zone-b")
    assert _price(twin)[1]["cents"] == 120  # OpenFeature: the caller's default
    with pytest.raises(BackendError, match="no variant 'half'"):
        twin.set_feature_flag("discount", "half")
    with pytest.raises(BackendError, match="no feature flag 'free'"):
        twin.set_feature_flag("free", "on")


def _calls(twin: Twin, **match: str) -> dict[str, dict[str, str]]:
    out = {}
    for series in twin.store.series("traces_span_metrics_calls_total"):
        labels = dict(series.labels)
        if all(labels.get(k) == v for k, v in match.items()):
            out[labels["span_name"]] = labels
    return out


def test_http_spans_feed_the_span_metrics_with_method_and_status():
    twin = _twin(120.0)
    server = _calls(twin, service_name="web", span_kind="SPAN_KIND_SERVER")["GET /price/{item}"]
    assert server["http_request_method"] == "GET" and server["http_response_status_code"] == "200"
    client = _calls(twin, service_name="edge", span_kind="SPAN_KIND_CLIENT")["GET"]
    assert client["server_address"] == "web" and client["http_response_status_code"] == "200"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gone=st.sets(st.tuples(st.sampled_from(COMPONENTS), st.sampled_from(("zone-a", "zone-b")))))
def test_a_request_succeeds_exactly_when_every_component_has_a_ready_replica(gone):
    twin = _twin(-280.0)  # early in the warm-up: every pod is up, little load has run
    for deployment, zone in sorted(gone):
        _remove(twin, deployment, zone)
    status, _body, spans = _price(twin)
    alive = all({(c, "zone-a"), (c, "zone-b")} - gone for c in COMPONENTS)
    assert (status == 200) == alive
    if alive:
        # each hop crosses only when its own zone has nothing ready, and then the callee's zone is
        # where the rest of the request stays
        for span in spans:
            if span["kind"] == "SPAN_KIND_SERVER":
                service, zone = span["service"], _zone(twin, span["pod"])
                assert (service, zone) not in gone
