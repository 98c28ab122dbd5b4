"""Direct faults and broken dependencies surface where a real cluster would show them."""

from __future__ import annotations

import difflib

import pytest

from pytest_marathon.backends import BackendError, create_backend
from pytest_marathon.twin.engine import Twin


@pytest.fixture
def twin() -> Twin:
    backend = create_backend("boutique", seed=11)
    backend.advance_to(0.0)
    return backend


def _pod(twin: Twin, deployment: str) -> dict:
    return [p for p in twin.resources("pods") if p["metadata"]["labels"]["app"] == deployment][0]


def test_memory_hog_gives_oomkilled_and_crashloop_backoff(twin: Twin) -> None:
    handle = twin.chaos_start("memory_hog", "recommendationservice", size="400Mi")
    twin.advance_to(120.0)
    status = _pod(twin, "recommendationservice")["status"]["containerStatuses"][0]
    assert status["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert status["restartCount"] >= 2
    assert status["state"] == {"waiting": {"reason": "CrashLoopBackOff"}}
    backoffs = [e for e in twin.events(object_name="recommendationservice") if e["reason"] == "BackOff"]
    assert backoffs and backoffs[-1]["count"] >= 2
    restarts_at_120 = status["restartCount"]
    twin.advance_to(600.0)
    restarts = _pod(twin, "recommendationservice")["status"]["containerStatuses"][0]["restartCount"]
    assert restarts - restarts_at_120 <= 4  # back-off doubles: 10, 20, 40, 80, 160 s ...
    twin.chaos_stop(handle)
    twin.advance_to(1000.0)
    assert twin.probe({"kind": "deployment_ready", "deployment": "recommendationservice"})


def test_leaking_patch_grows_memory_until_oomkilled(twin: Twin) -> None:
    source = twin.source("currencyservice", path="service.py")["service.py"]
    leaky = "SEEN = []\n" + source.replace(
        "def Convert(ctx, request):\n", "def Convert(ctx, request):\n    SEEN.append('x' * 60000)\n", 1)
    diff = "".join(difflib.unified_diff(source.splitlines(keepends=True), leaky.splitlines(keepends=True),
                                        fromfile="a/service.py", tofile="b/service.py"))
    result = twin.release("currencyservice", patch=diff, change_cause="cache recent conversions")
    assert result.ok and result.revision == 2, result.message
    image = twin.artifact_value("image:currencyservice")
    assert image.startswith("currencyservice:v0.10.6-") and len(image.rsplit("-", 1)[1]) == 7
    assert "SEEN.append" in twin.source_diff("currencyservice", 1, 2)
    twin.advance_to(1800.0)
    memory = [s for s in twin.store.series("container_memory_working_set_bytes") if s.labels["container"] == "currencyservice"]
    assert max(max(s.values) for s in memory) > 64 * 1024**2
    status = _pod(twin, "currencyservice")["status"]["containerStatuses"][0]
    assert status["lastState"]["terminated"]["reason"] == "OOMKilled"


def test_hostile_patch_is_refused_by_the_build(twin: Twin) -> None:
    source = twin.source("currencyservice", path="service.py")["service.py"]
    built = twin.build_image("currencyservice", {"service.py": "import os\n" + source})
    assert not built.ok and any("os" in f for f in built.failures)
    assert twin.rollout_history("currencyservice")[-1]["revision"] == 1


def test_redis_outage_surfaces_in_callers(twin: Twin) -> None:
    handle = twin.chaos_start("datastore_outage", "redis-cart")
    twin.advance_to(300.0)
    cart_errors = twin.logs(service="cartservice", level="error", contains="Can't access cart storage", limit=3)
    assert cart_errors
    frontend_errors = twin.logs(service="frontend", level="error", contains="cart", limit=3)
    assert frontend_errors and "rpc error: code = " in frontend_errors[-1]["message"]
    bad = [s for s in twin.store.series("rpc_client_call_duration_seconds_count")
           if s.labels["service"] == "frontend" and s.labels["peer_service"] == "cartservice"
           and s.labels["rpc_grpc_status_code"] != "0"]
    assert bad and sum(s.values[-1] for s in bad) > 0
    traces = twin.traces(service="frontend", errors_only=True, limit=3)
    assert traces and "cartservice" in traces[-1]["services"]
    assert twin.store.series("redis_up")[0].values[-1] == 0.0
    assert not twin.probe({"kind": "request", "route": "/cart"})
    twin.chaos_stop(handle)
    twin.advance_to(700.0)  # the failing liveness probe restarted redis; back-off must run out first
    assert twin.probe({"kind": "request", "route": "/cart"})


def test_credential_rotation_breaks_cart_until_its_pods_restart(twin: Twin) -> None:
    twin.chaos_start("credential_rotation", "redis-cart")
    twin.advance_to(120.0)
    assert twin.logs(service="cartservice", level="error", contains="WRONGPASS", limit=1)
    assert not twin.probe({"kind": "request", "route": "/cart"})
    twin.restart("cartservice")
    twin.advance_to(200.0)
    assert twin.probe({"kind": "request", "route": "/cart"})


def test_rolling_back_a_rotation_keeps_clients_that_took_the_new_credential(twin: Twin) -> None:
    rotation = twin.chaos_start("credential_rotation", "redis-cart")
    twin.advance_to(60.0)
    twin.restart("cartservice")  # its pods now hold the rotated password
    twin.advance_to(150.0)
    twin.chaos_stop(rotation)
    twin.advance_to(300.0)
    assert twin.probe({"kind": "request", "route": "/cart"})
    assert not twin.logs(service="cartservice", level="error", contains="WRONGPASS", since=160.0, limit=1)


def test_redis_maxmemory_rejects_writes(twin: Twin) -> None:
    twin.chaos_start("redis_maxmemory", "redis-cart")
    twin.advance_to(300.0)
    assert twin.logs(service="cartservice", level="error", contains="OOM command not allowed", limit=1) or \
        twin.logs(service="frontend", level="error", contains="OOM command not allowed", limit=1)


def test_network_delay_and_partition(twin: Twin) -> None:
    delay = twin.chaos_start("network_delay", "productcatalogservice", delay_ms=800)
    twin.advance_to(120.0)
    assert not twin.probe({"kind": "request", "route": "/product/OLJCESPC7Z"})
    assert max(s.l for s in twin.sli_samples(since=30.0)) > 0.0
    slow = twin.traces(service="productcatalogservice", min_duration_ms=2500.0, limit=1)
    assert slow and slow[0]["duration_ms"] >= 2500.0
    twin.chaos_stop(delay)
    twin.chaos_start("partition", "checkoutservice", peer="paymentservice")
    twin.advance_to(600.0)
    assert twin.logs(service="checkoutservice", level="error", contains="DeadlineExceeded", limit=1) or \
        twin.logs(service="checkoutservice", level="error", contains="deadline", limit=1)
    assert twin.probe({"kind": "request", "route": "/"})


def test_cpu_hog_throttles(twin: Twin) -> None:
    twin.chaos_start("cpu_hog", "currencyservice", cores=2.0)
    twin.advance_to(120.0)
    throttled = [s for s in twin.store.series("container_cpu_cfs_throttled_periods_total") if s.labels["container"] == "currencyservice"]
    assert throttled[0].values[-1] > throttled[0].values[0]


def test_node_failure_evicts_and_reschedules_after_300s(twin: Twin) -> None:
    node = _pod(twin, "frontend")["spec"]["nodeName"]
    twin.chaos_start("node_failure", node)
    twin.advance_to(30.0)
    assert not _pod(twin, "frontend")["status"]["containerStatuses"][0]["ready"]
    assert twin.artifact_value(f"node:{node}") == "NotReady"
    twin.advance_to(400.0)
    assert _pod(twin, "frontend")["spec"]["nodeName"] != node
    assert twin.probe({"kind": "deployment_ready", "deployment": "frontend"})


def test_probes_leave_no_trace(twin: Twin) -> None:
    logs, traces = len(twin.logs(limit=10**6)), len(twin.traces(limit=10**6))
    counts = twin.store.sample_count()
    for route in ("/", "/cart", "/cart/checkout", "/product/OLJCESPC7Z"):
        assert twin.probe({"kind": "request", "route": route})
    assert twin.probe({"kind": "rpc", "service": "currencyservice", "method": "GetSupportedCurrencies", "request": {}})
    assert twin.probe({"kind": "no_error_logs", "service": "frontend", "window": 60})
    assert (len(twin.logs(limit=10**6)), len(twin.traces(limit=10**6)), twin.store.sample_count()) == (logs, traces, counts)


def test_chaos_bad_input(twin: Twin) -> None:
    with pytest.raises(BackendError, match="unknown chaos kind"):
        twin.chaos_start("meteor", "frontend")
    with pytest.raises(BackendError, match="datastore"):
        twin.chaos_start("datastore_outage", "frontend")
    with pytest.raises(BackendError, match="no active chaos"):
        twin.chaos_stop("chaos-9999")
