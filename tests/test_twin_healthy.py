"""A fault-free marathon of the boutique twin: healthy users, no restarts, sane telemetry."""

from __future__ import annotations

import pytest

from pytest_marathon.backends import Backend, create_backend


@pytest.fixture(scope="module")
def marathon() -> Backend:
    backend = create_backend("boutique", seed=7)
    backend.advance_to(90 * 60.0)
    return backend


def _p95_from_buckets(backend: Backend) -> float:
    """p95 of all frontend requests (ms), from the span-metrics histogram at the end of the run."""
    totals: dict[float, float] = {}
    for series in backend.store.series("traces_span_metrics_duration_milliseconds_bucket"):
        if "http_response_status_code" not in series.labels:
            continue
        le = series.labels["le"]
        bound = float("inf") if le == "+Inf" else float(le)
        totals[bound] = totals.get(bound, 0.0) + series.values[-1]
    count = totals[float("inf")]
    return next(bound for bound in sorted(totals) if totals[bound] >= 0.95 * count)


def test_backend_protocol_is_implemented(marathon: Backend) -> None:
    assert isinstance(marathon, Backend)
    assert marathon.now == 5400.0
    assert "loadgenerator" in marathon.infrastructure()
    assert "loadgenerator" not in marathon.workloads()
    assert {"frontend", "cartservice", "redis-cart"} <= set(marathon.workloads())


def test_users_are_served(marathon: Backend) -> None:
    samples = marathon.sli_samples(since=marathon.tick_seconds)  # each sample covers the tick before it
    assert len(samples) == 5400 / marathon.tick_seconds
    requests = sum(s.q for s in samples) * marathon.tick_seconds
    failed = sum(s.q * s.e for s in samples) * marathon.tick_seconds
    assert requests > 5000  # 10 Locust users waiting 1-10 s for 90 minutes
    assert failed / requests < 0.005
    assert _p95_from_buckets(marathon) <= 1000.0
    assert max(s.l for s in samples) == 0.0


def test_no_pod_restarts_and_all_ready(marathon: Backend) -> None:
    pods = marathon.resources("pods")
    assert len(pods) == len(marathon.workloads())
    for pod in pods:
        status = pod["status"]["containerStatuses"][0]
        assert status["restartCount"] == 0, pod["metadata"]["name"]
        assert status["ready"], pod["metadata"]["name"]
    restarts = marathon.store.series("kube_pod_container_status_restarts_total")
    assert restarts and all(max(s.values) == 0 for s in restarts)


def test_metric_families_follow_the_contract(marathon: Backend) -> None:
    names = set(marathon.store.names())
    for family in (
        "traces_span_metrics_duration_milliseconds_bucket",
        "traces_span_metrics_calls_total",
        "container_memory_working_set_bytes",
        "container_cpu_cfs_throttled_periods_total",
        "kube_deployment_status_replicas_available",
        "kube_pod_status_ready",
        "kube_node_status_condition",
        "redis_up",
    ):
        assert family in names, family
    spans = marathon.store.series("traces_span_metrics_calls_total")
    server = [s for s in spans if s.labels["span_kind"] == "SPAN_KIND_SERVER"]
    # cartservice, shippingservice and adservice do not trace upstream (tests/test_twin_instrumentation.py)
    assert {s.labels["service_name"] for s in server} >= {"checkoutservice", "productcatalogservice", "currencyservice"}
    assert all(s.labels["job"] == s.labels["service_name"] and "namespace" not in s.labels for s in server)
    client = [s for s in spans if s.labels["span_kind"] == "SPAN_KIND_CLIENT"]
    assert ("frontend", "cartservice") in {(s.labels["service_name"], s.labels["server_address"]) for s in client}
    scrape_times = server[0].times
    assert all(b - a == 15.0 for a, b in zip(scrape_times, scrape_times[1:]))


def test_traces_follow_the_call_graph(marathon: Backend) -> None:
    checkouts = [t for t in marathon.traces(limit=2000) if t["route"] == "checkout"]
    assert checkouts, "a 90-minute run has checkouts"
    full = marathon.trace(checkouts[-1]["trace_id"])
    services = {span["service"] for span in full["spans"]}
    assert {"frontend", "checkoutservice", "paymentservice", "emailservice"} <= services
    called = {span["name"].split("/")[0] for span in full["spans"] if span["kind"] == "SPAN_KIND_CLIENT"}
    assert {"hipstershop.ShippingService", "hipstershop.CartService"} <= called  # the callers' client spans
    ids = {span["span_id"] for span in full["spans"]}
    assert all(span["parent_span_id"] in ids for span in full["spans"] if span["parent_span_id"])


def test_kubernetes_json_shapes(marathon: Backend) -> None:
    deployment = marathon.resources("deployments", "cartservice")[0]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    assert env["REDIS_ADDR"]["value"] == "redis-cart:6379,password=$(REDIS_PASSWORD)"
    assert env["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "redis-cart-credentials"
    assert deployment["status"]["availableReplicas"] == 1
    service = marathon.resources("services", "emailservice")[0]
    assert service["spec"]["ports"][0]["port"] == 5000 and service["spec"]["ports"][0]["targetPort"] == 8080
    nodes = marathon.resources("nodes")
    assert len({n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes}) == 2
    with pytest.raises(Exception, match="secrets are not readable"):
        marathon.resources("secrets")
