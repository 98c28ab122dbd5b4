"""Direct faults and broken dependencies surface where a real cluster would show them."""

from __future__ import annotations

import difflib
import math

import pytest

from pytest_marathon.alerting import PromQLEngine
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
    assert image.startswith(twin.spec.deployments["currencyservice"].image + "-") and len(image.rsplit("-", 1)[1]) == 7
    assert "SEEN.append" in twin.source_diff("currencyservice", 1, 2)
    twin.advance_to(1800.0)
    memory = [s for s in twin.store.series("container_memory_working_set_bytes") if s.labels["pod"].startswith("currencyservice-")]
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
    # RedisCartStore.cs throws FailedPrecondition; ASP.NET Core logs the status at Information
    cart_errors = twin.logs(service="cartservice", level="info", contains="Can't access cart storage", limit=3)
    assert cart_errors and "RedisConnectionException" in cart_errors[-1]["message"]
    frontend_errors = twin.logs(service="frontend", level="error", contains="cart", limit=3)
    assert frontend_errors and "rpc error: code = " in frontend_errors[-1]["message"]
    bad = [s for s in twin.store.series("traces_span_metrics_calls_total")
           if s.labels["service_name"] == "frontend" and s.labels.get("server_address") == "cartservice"
           and s.labels["rpc_grpc_status_code"] != "0"]
    assert bad and sum(s.values[-1] for s in bad) > 0
    traces = twin.traces(service="frontend", errors_only=True, limit=3)
    # cartservice records no spans (tests/test_twin_instrumentation.py): the frontend's client span shows the call
    assert traces and any(s["name"].startswith("hipstershop.CartService/") and s["status"] == "STATUS_CODE_ERROR"
                          for s in twin.trace(traces[-1]["trace_id"])["spans"])
    assert twin.store.series("redis_up")[0].values[-1] == 0.0
    assert not twin.probe({"kind": "request", "route": "/cart"})
    twin.chaos_stop(handle)
    twin.advance_to(700.0)  # the failing liveness probe restarted redis; back-off must run out first
    assert twin.probe({"kind": "request", "route": "/cart"})


def test_credential_rotation_breaks_cart_until_its_pods_restart(twin: Twin) -> None:
    twin.chaos_start("credential_rotation", "redis-cart")
    twin.advance_to(120.0)
    assert twin.logs(service="cartservice", contains="WRONGPASS", limit=1)
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
    assert not twin.logs(service="cartservice", contains="WRONGPASS", since=160.0, limit=1)


def test_redis_maxmemory_rejects_writes_and_a_restart_of_redis_clears_it(twin: Twin) -> None:
    """Writes fail with redis' OOM error, reads still work; cartservice's gRPC server (ASP.NET
    Core) logs the status it raises; a restarted redis starts with its configured maxmemory."""
    twin.chaos_start("redis_maxmemory", "redis-cart", maxmemory="512Ki")
    twin.advance_to(300.0)
    raised = twin.logs(service="cartservice", contains="OOM command not allowed", limit=1)
    assert raised and raised[0]["level"] == "info"
    assert raised[0]["message"].startswith("Error status code 'FailedPrecondition' with detail 'Can't access cart")
    assert twin.logs(service="frontend", level="error", contains="OOM command not allowed", limit=1)
    assert not twin.probe({"kind": "request", "route": "add_to_cart", "signature": ["OOM command not allowed"]})
    assert twin.probe({"kind": "request", "route": "home"})
    twin.restart("redis-cart")
    twin.advance_to(600.0)
    assert twin.probe({"kind": "request", "route": "add_to_cart", "signature": ["OOM command not allowed"]})



def test_a_refused_write_leaves_redis_memory_where_it_was(twin: Twin) -> None:
    """Redis refuses a denyoom command before running it (server.c processCommand): a refused
    HSET writes nothing, not even a new key, so used memory stays where the limit pinned it
    while shoppers keep trying to fill their carts."""
    twin.advance_to(120.0)
    twin.chaos_start("redis_maxmemory", "redis-cart")  # the limit: what redis uses right now
    twin.advance_to(135.0)
    promql = PromQLEngine(twin.store)
    pinned = promql.instant("sum(redis_memory_used_bytes)", 135.0)[0]["value"]
    twin.advance_to(600.0)
    assert twin.logs(service="cartservice", contains="OOM command not allowed", since=135.0, limit=1)
    assert promql.instant("sum(redis_memory_used_bytes)", 600.0)[0]["value"] == pinned

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
    # no call has a deadline (upstream checkoutservice calls with the request's context): the
    # charge hangs until the load generator gives up and Go cancels the request's context;
    # checkoutservice returns the failure unlogged, the frontend's renderHTTPError logs the chain
    assert twin.logs(service="frontend", level="error", contains="context canceled", limit=1)
    assert not twin.logs(contains="deadline", limit=1)
    assert twin.probe({"kind": "request", "route": "/"})


def test_cpu_hog_throttles(twin: Twin) -> None:
    twin.chaos_start("cpu_hog", "currencyservice", cores=2.0)
    twin.advance_to(120.0)
    throttled = [s for s in twin.store.series("container_cpu_cfs_throttled_periods_total") if s.labels["pod"].startswith("currencyservice-")]
    counted = [v for v in throttled[0].values if not math.isnan(v)]
    assert max(counted) > counted[0]


def test_node_failure_evicts_and_reschedules_after_300s(twin: Twin) -> None:
    """The node lifecycle controller notices a silent node after --node-monitor-grace-period
    (40 s), marks its pods NotReady and taints it unreachable; the default 300 s toleration then
    evicts them (pkg/controller/nodelifecycle/node_lifecycle_controller.go)."""
    node = _pod(twin, "frontend")["spec"]["nodeName"]
    twin.chaos_start("node_failure", node)
    twin.advance_to(30.0)
    assert _pod(twin, "frontend")["status"]["containerStatuses"][0]["ready"]
    assert twin.artifact_value(f"node:{node}") == "NotReady"
    twin.advance_to(50.0)
    assert not _pod(twin, "frontend")["status"]["containerStatuses"][0]["ready"]
    twin.advance_to(400.0)
    live = [p for p in twin.resources("pods") if p["metadata"]["labels"]["app"] == "frontend"
            and "deletionTimestamp" not in p["metadata"]]
    assert live and all(p["spec"]["nodeName"] != node for p in live)
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


PARTITION_SIGNATURE = ["frontend -> cartservice:7070:", "context canceled"]


def test_signature_probe_answers_for_its_own_fault_only(twin: Twin) -> None:
    """A fault-specific probe stays unhealthy while its fault lasts and is not made unhealthy by
    an unrelated fault on the same page; the plain probe cannot tell the two apart."""
    cart_probe = {"kind": "request", "route": "/cart", "signature": PARTITION_SIGNATURE}
    plain = {"kind": "request", "route": "/cart"}
    partition = twin.chaos_start("partition", "cartservice", peer="frontend")
    twin.release("frontend", env={"CURRENCY_SERVICE_ADDR": "currency-service:7000"},
                 change_cause="Point CURRENCY_SERVICE_ADDR at the currency-service alias")
    twin.advance_to(90.0)
    currency_probe = {"kind": "request", "route": "/", "signature": ["frontend -> currency-service:7000:"]}
    assert not twin.probe(cart_probe) and not twin.probe(currency_probe)
    twin.chaos_stop(partition)
    twin.advance_to(120.0)
    assert twin.probe(cart_probe)
    assert not twin.probe(plain) and not twin.probe(currency_probe)


def test_latency_signature_names_the_slow_edge(twin: Twin) -> None:
    slow_edge = {"kind": "request", "route": "/product/OLJCESPC7Z",
                 "signature": ["frontend -> productcatalogservice:3550", "slow network"]}
    other_edge = {**slow_edge, "signature": ["frontend -> currencyservice:7000", "slow network"]}
    delay = twin.chaos_start("network_delay", "productcatalogservice", delay_ms=3500, peer="frontend")
    twin.advance_to(60.0)
    assert not twin.probe(slow_edge)
    assert twin.probe(other_edge)
    twin.chaos_stop(delay)
    twin.advance_to(90.0)
    assert twin.probe(slow_edge)


def test_deployment_ready_means_the_current_revision_is_rolled_out(twin: Twin) -> None:
    ready = {"kind": "deployment_ready", "deployment": "shippingservice"}
    assert twin.probe(ready)
    twin.release("shippingservice", image="shippingservice:v0.10.7", change_cause="Bump shippingservice to v0.10.7")
    twin.advance_to(120.0)
    assert twin.probe({"kind": "request", "route": "/cart"})  # the old pod still serves
    assert not twin.probe(ready)
    twin.rollback("shippingservice")
    twin.advance_to(200.0)
    assert twin.probe(ready)


def test_bad_signature_is_refused(twin: Twin) -> None:
    with pytest.raises(BackendError, match="signature"):
        twin.probe({"kind": "request", "route": "/", "signature": [""]})


def test_a_call_loop_is_cut_off_like_an_expired_deadline(twin: Twin) -> None:
    from pytest_marathon.twin.runtime import MAX_CALLS_PER_REQUEST

    source = twin.source("recommendationservice", path="service.py")["service.py"]
    looping = source.replace(
        '    catalog = ctx.call(catalog_addr, "ListProducts", {})\n',
        '    catalog = ctx.call(catalog_addr, "ListProducts", {})\n'
        '    for attempt in range(5000):\n'
        '        catalog = ctx.call(catalog_addr, "ListProducts", {})\n', 1)
    diff = "".join(difflib.unified_diff(source.splitlines(keepends=True), looping.splitlines(keepends=True),
                                        fromfile="a/service.py", tofile="b/service.py"))
    assert twin.release("recommendationservice", patch=diff, change_cause="refresh the catalog until it settles").ok
    twin.advance_to(120.0)
    traces = twin.traces(service="recommendationservice", limit=10**6)
    assert traces and max(t["span_count"] for t in traces) <= 2 * MAX_CALLS_PER_REQUEST + 10
    assert twin.logs(service="frontend", contains="recommendations", level="warning", limit=1) or \
        twin.logs(service="frontend", contains="recommendations", limit=1)


def test_repeated_pod_kill_keeps_the_service_flapping_until_a_second_replica(twin: Twin) -> None:
    kills = twin.chaos_start("pod_kill", "currencyservice", count=1, interval=60)
    signature = {"kind": "request", "route": "/", "signature": ["-> currencyservice:7000", "connection refused"]}
    samples = []
    for t in range(15, 301, 15):
        twin.advance_to(float(t))
        samples.append(twin.probe(signature))
    assert samples.count(False) >= 4  # down after every kill, not only after the first
    killed = [e for e in twin.events(object_name="currencyservice", limit=1000) if e["reason"] == "Killing"]
    assert len(killed) >= 4
    twin.scale("currencyservice", 2)
    twin.advance_to(420.0)
    later = []
    for t in range(435, 661, 15):
        twin.advance_to(float(t))
        later.append(twin.probe(signature))
    assert all(later)
    twin.chaos_stop(kills)


def test_too_low_memory_limit_crash_loops_the_new_pod_while_the_old_one_serves(twin: Twin) -> None:
    twin.release("shippingservice", resources={"limits.memory": "12Mi"}, change_cause="Right-size memory")
    twin.advance_to(180.0)
    ready = {"kind": "deployment_ready", "deployment": "shippingservice"}
    assert not twin.probe(ready)
    assert twin.probe({"kind": "request", "route": "/cart"})
    events = twin.events(object_name="shippingservice", limit=1000)
    # OOMKilled is in the container status; the OOMKilling event is node-problem-detector's,
    # which a Kind cluster does not run
    assert not any(e["reason"] == "OOMKilling" for e in events)
    statuses = [p["status"]["containerStatuses"][0] for p in twin.resources("pods")
                if p["metadata"]["labels"]["app"] == "shippingservice"]
    assert any(s.get("lastState", {}).get("terminated", {}).get("reason") == "OOMKilled" for s in statuses)
    twin.rollback("shippingservice")
    twin.advance_to(300.0)
    assert twin.probe(ready)


def test_restarting_stale_clients_corrects_a_rotated_secret(twin: Twin) -> None:
    """The responsible artifact of a rotation is the clients' copy of the secret: the repair
    (restart the clients) changes it, though the Secret itself stays rotated."""
    healthy = twin.artifact_value("secret:redis-cart-credentials")
    assert healthy.endswith(":in-sync")
    twin.chaos_start("credential_rotation", "redis-cart")
    twin.advance_to(30.0)
    rotated = twin.artifact_value("secret:redis-cart-credentials")
    assert rotated.endswith(":stale-consumers") and rotated.split(":")[1] != healthy.split(":")[1]
    twin.restart("cartservice")
    twin.advance_to(150.0)
    assert twin.artifact_value("secret:redis-cart-credentials") == rotated.replace(
        "stale-consumers", "in-sync")


def test_pods_on_a_failed_node_do_not_count_as_serving(twin: Twin) -> None:
    assert twin.artifact_value("pod:checkoutservice") == "1"
    twin.chaos_start("node_failure", "checkoutservice")
    twin.advance_to(30.0)
    assert twin.artifact_value("pod:checkoutservice") == "0"
    twin.restart("checkoutservice")
    twin.advance_to(120.0)
    assert twin.artifact_value("pod:checkoutservice") == "1"


def test_a_second_rotation_never_reissues_a_credential_clients_already_hold(twin: Twin) -> None:
    """Rotating to a value that an earlier rotation handed out would leave clients restarted
    during that rotation untouched: the twin issues a fresh value instead."""
    first = twin.chaos_start("credential_rotation", "redis-cart", new_password="next")
    twin.restart("cartservice")  # its new pod reads the rotated value
    twin.advance_to(150.0)
    twin.chaos_stop(first)
    twin.advance_to(200.0)
    probe = {"kind": "rpc", "service": "cartservice", "method": "GetCart", "request": {"user_id": "u"},
             "signature": ["WRONGPASS"]}
    assert twin.probe(probe)  # the rolled-back server still honours the value the pod holds
    twin.chaos_start("credential_rotation", "redis-cart", new_password="next")
    twin.advance_to(260.0)
    assert not twin.probe(probe)
    assert twin.logs(service="cartservice", contains="WRONGPASS", since=200.0, limit=1)


def test_a_rotation_the_server_did_not_reload_breaks_the_restarted_clients_until_it_restarts(twin: Twin) -> None:
    """The reloader restarts the Secret's clients; redis still runs with the requirepass it read at
    its start. Restarting redis (it reads the Secret again) repairs it; the secret artifact reads
    stale while any running client or server holds another value than the Secret's."""
    probe = {"kind": "rpc", "service": "cartservice", "method": "GetCart", "request": {"user_id": "u"},
             "signature": ["WRONGPASS"]}
    before = twin.artifact_value("secret:redis-cart-credentials")
    assert before.endswith(":in-sync")
    handle = twin.chaos_start("credential_rotation", "redis-cart", new_password="next", reload="clients")
    assert [h["revision"] for h in twin.rollout_history("cartservice")] == [1, 2]  # restarted
    twin.advance_to(120.0)
    assert not twin.probe(probe)
    faulty = twin.artifact_value("secret:redis-cart-credentials")
    assert faulty.endswith(":stale-consumers")
    twin.restart("redis-cart")
    twin.advance_to(240.0)
    assert twin.probe(probe)
    assert twin.artifact_value("secret:redis-cart-credentials").endswith(":in-sync")
    twin.chaos_stop(handle)
    twin.advance_to(420.0)
    assert twin.probe(probe)
    assert twin.artifact_value("secret:redis-cart-credentials") == before


def test_a_rotation_with_an_unknown_reload_is_refused(twin: Twin) -> None:
    secret = twin.artifact_value("secret:redis-cart-credentials")
    with pytest.raises(BackendError, match="reload must be one of server, clients"):
        twin.chaos_start("credential_rotation", "redis-cart", reload="everyone")
    assert twin.artifact_value("secret:redis-cart-credentials") == secret


def test_a_container_that_does_not_run_has_no_cadvisor_series(twin: Twin) -> None:
    """As on a cluster: while its image cannot be pulled the container has no cgroup, so its
    working set is absent (not 0), while kube-state-metrics reports why it waits."""
    promql = PromQLEngine(twin.store)
    twin.release("emailservice", image="emailservice:v9.9.9", strategy={"type": "Recreate"},
                 change_cause="bump emailservice")
    twin.advance_to(180.0)
    working_set = promql.instant('container_memory_working_set_bytes{pod=~"emailservice-.*"}', twin.now)
    waiting = promql.instant('kube_pod_container_status_waiting_reason{pod=~"emailservice-.*"} == 1', twin.now)
    assert working_set == []
    assert {w["labels"]["reason"] for w in waiting} == {"ImagePullBackOff"}
    twin.rollback("emailservice")
    twin.advance_to(300.0)
    [series] = promql.instant('container_memory_working_set_bytes{pod=~"emailservice-.*"}', twin.now)
    assert series["value"] > 0
