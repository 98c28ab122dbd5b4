"""How failures surface in the Online Boutique twin, each pinned against the upstream source that
shows it on a real cluster (microservices-demo v0.10.6 unless another repository is named)."""

from __future__ import annotations

import difflib
from typing import Any

import pytest

from pytest_marathon.backends import create_backend
from pytest_marathon.twin.engine import Twin
from pytest_marathon.twin.errors import RpcError


@pytest.fixture
def twin() -> Twin:
    backend = create_backend("boutique", seed=2)
    backend.advance_to(0.0)
    return backend


def _pods(twin: Twin, app: str) -> list[dict[str, Any]]:
    return [p for p in twin.resources("pods") if p["metadata"]["labels"]["app"] == app]


def _current(twin: Twin, app: str) -> str:
    return [h for h in twin.rollout_history(app) if h["current"]][0]["replica_set"]


def _patched(twin: Twin, service: str, old: str, new: str, path: str = "service.py") -> str:
    source = twin.source(service, path=path)[path]
    changed = source.replace(old, new, 1)
    assert changed != source, f"{old!r} not in {service}/{path}"
    return "".join(difflib.unified_diff(source.splitlines(keepends=True), changed.splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}"))


# release/kubernetes-manifests.yaml (v0.10.6): the images the manifests name
REGISTRY = "us-central1-docker.pkg.dev/online-boutique-ci/microservices-demo"


def _messages(twin: Twin, service: str, since: float = 0.0) -> list[str]:
    return [line["message"] for line in twin.logs(service=service, since=since, limit=100_000)]


# --- deadlines ---------------------------------------------------------------------------------------

def test_a_4s_currency_delay_slows_pages_and_fails_none() -> None:
    """No call in the shop has a deadline but the frontend's ads call (src/frontend/rpc.go: only
    getAd uses context.WithTimeout, 100 ms; checkoutservice/main.go calls with context.TODO()), so
    4 s on every frontend -> currencyservice call makes pages slow, not failed."""
    twin = create_backend("boutique", seed=1)
    twin.advance_to(0.0)
    twin.chaos_start("network_delay", "currencyservice", delay_ms=4000, peer="frontend")
    twin.advance_to(300.0)
    samples = [s for s in twin.sli_samples(since=30.0) if s.q > 0]
    assert max(s.e for s in samples) == 0.0
    assert sum(s.l for s in samples) / len(samples) > 0.5  # most requests now take over 2.5 s
    assert not twin.logs(level="error", since=0.0, limit=1)
    assert not twin.logs(contains="deadline", since=0.0, limit=1)


def test_the_ads_call_is_the_only_one_with_a_deadline(twin: Twin) -> None:
    """src/frontend/rpc.go getAd: 100 ms, then DeadlineExceeded; the page renders without ads and
    the frontend only warns (handlers.go chooseAd)."""
    twin.chaos_start("network_delay", "adservice", delay_ms=500, peer="frontend")
    twin.advance_to(120.0)
    warned = twin.logs(service="frontend", level="warning", contains="failed to retrieve ads", limit=5)
    assert warned and "code = DeadlineExceeded desc = context deadline exceeded" in warned[-1]["message"]
    assert max(s.e for s in twin.sli_samples(since=30.0)) == 0.0


def test_a_hung_call_ends_when_the_load_generator_gives_up(twin: Twin) -> None:
    """locust FastHttpUser's network_timeout is 60 s (locust/contrib/fasthttp.py); then net/http
    cancels the request's context and the call in flight fails with Canceled."""
    twin.chaos_start("partition", "cartservice", peer="frontend")
    twin.advance_to(120.0)
    lines = twin.logs(service="frontend", contains="could not retrieve cart", limit=5)
    assert lines and "rpc error: code = Canceled desc = context canceled" in lines[-1]["message"]
    slowest = twin.traces(service="frontend", min_duration_ms=59_000.0, limit=1)
    assert slowest and slowest[0]["duration_ms"] <= 60_500.0


def test_a_delay_on_the_whole_pod_times_out_the_kubelet_probes(twin: Twin) -> None:
    """A delay on all of a pod's traffic reaches the kubelet's gRPC probe too; timeoutSeconds
    defaults to 1 s, so the probe fails as pkg/probe/grpc/grpc.go words it and liveness restarts
    the container."""
    twin.chaos_start("network_delay", "currencyservice", delay_ms=4000)
    twin.advance_to(120.0)
    events = [e["message"] for e in twin.events(object_name="currencyservice", limit=1000)]
    assert any("Liveness probe failed: timeout: failed to connect service" in m
               and "within 1s: context deadline exceeded" in m for m in events)
    assert any("failed liveness probe, will be restarted" in m for m in events)


# --- start-up failures -------------------------------------------------------------------------------

def test_an_empty_required_address_crash_loops_the_new_pod_while_the_old_one_serves(twin: Twin) -> None:
    """src/frontend/main.go mustMapEnv: panic(fmt.Sprintf("environment variable %q not set")) before
    the server listens; a Go panic exits 2. The RollingUpdate keeps the old pod serving."""
    old = _pods(twin, "frontend")[0]["metadata"]["name"]
    twin.release("frontend", env={"CART_SERVICE_ADDR": ""}, change_cause="Move CART_SERVICE_ADDR")
    twin.advance_to(200.0)
    new = [p for p in _pods(twin, "frontend") if p["metadata"]["name"].startswith(_current(twin, "frontend"))]
    status = new[0]["status"]["containerStatuses"][0]
    assert status["restartCount"] >= 2
    assert status["lastState"]["terminated"]["exitCode"] == 2
    assert status["state"].get("waiting", {}).get("reason") == "CrashLoopBackOff"
    assert any(m.startswith('panic: environment variable "CART_SERVICE_ADDR" not set\n\ngoroutine 1 [running]:')
               for m in _messages(twin, "frontend"))
    assert old in {p["metadata"]["name"] for p in _pods(twin, "frontend")}
    assert max(s.e for s in twin.sli_samples(since=60.0)) == 0.0
    assert twin.probe({"kind": "request", "route": "/cart"})
    assert not twin.probe({"kind": "deployment_ready", "deployment": "frontend"})


def test_checkoutservice_panics_at_start_on_an_empty_address(twin: Twin) -> None:
    """src/checkoutservice/main.go mustMapEnv, in order SHIPPING, PRODUCT_CATALOG, CART, ..."""
    twin.release("checkoutservice", env={"PAYMENT_SERVICE_ADDR": ""}, change_cause="defaults")
    twin.advance_to(60.0)
    assert any(m.startswith('panic: environment variable "PAYMENT_SERVICE_ADDR" not set')
               for m in _messages(twin, "checkoutservice"))


def test_recommendationservice_raises_at_start_without_the_catalog_address(twin: Twin) -> None:
    """src/recommendationservice/recommendation_server.py __main__ raises Exception; Python exits 1."""
    twin.release("recommendationservice", env={"PRODUCT_CATALOG_SERVICE_ADDR": ""}, change_cause="defaults")
    twin.advance_to(60.0)
    assert any(m.endswith("Exception: PRODUCT_CATALOG_SERVICE_ADDR environment variable not set")
               for m in _messages(twin, "recommendationservice"))
    new = [p for p in _pods(twin, "recommendationservice")
           if p["metadata"]["name"].startswith(_current(twin, "recommendationservice"))]
    assert new[0]["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1


def test_productcatalogservice_exits_on_a_malformed_extra_latency(twin: Twin) -> None:
    """src/productcatalogservice/server.go: log.Fatalf("failed to parse EXTRA_LATENCY (%s) as
    time.Duration: %+v", v, err) with v the zero Duration; Go's time.ParseDuration error texts."""
    twin.release("productcatalogservice", env={"EXTRA_LATENCY": "5 s"}, change_cause="slow down")
    twin.advance_to(60.0)
    assert 'failed to parse EXTRA_LATENCY (0s) as time.Duration: time: unknown unit " s" in duration "5 s"' \
        in _messages(twin, "productcatalogservice")
    twin.release("productcatalogservice", env={"EXTRA_LATENCY": "5"}, change_cause="slow down")
    twin.advance_to(120.0)
    assert 'failed to parse EXTRA_LATENCY (0s) as time.Duration: time: missing unit in duration "5"' \
        in _messages(twin, "productcatalogservice")


def test_cartservice_without_redis_address_keeps_carts_in_memory(twin: Twin) -> None:
    """src/cartservice/src/Startup.cs: no REDIS_ADDR -> AddDistributedMemoryCache, one line on
    stdout, and the service runs."""
    twin.release("cartservice", env={"REDIS_ADDR": ""}, change_cause="defaults")
    twin.advance_to(120.0)
    assert twin.probe({"kind": "deployment_ready", "deployment": "cartservice"})
    assert ("Redis cache host(hostname+port) was not specified. Starting a cart service using in memory store"
            in _messages(twin, "cartservice"))
    assert twin.probe({"kind": "request", "route": "/cart"})


# --- panics --------------------------------------------------------------------------------------------

def test_a_go_grpc_panic_restarts_the_container(twin: Twin) -> None:
    """grpc-go's server.go has no recover(): money.Must's panic (checkoutservice/main.go PlaceOrder)
    ends the process, exit 2; the caller's RPC fails with `error reading from server: EOF`
    (grpc-go internal/transport/http2_client.go)."""
    patch = _patched(twin, "checkoutservice", "    total = money.add(money.zero(currency), shipping)",
                     "    total = money.add(money.zero(\"USD\"), shipping)")
    assert twin.release("checkoutservice", patch=patch, change_cause="total in USD").ok
    twin.advance_to(200.0)
    pod = [p for p in _pods(twin, "checkoutservice")
           if p["metadata"]["name"].startswith(_current(twin, "checkoutservice"))][0]
    status = pod["status"]["containerStatuses"][0]
    assert status["restartCount"] >= 1
    assert status["lastState"]["terminated"]["exitCode"] == 2
    assert any(m.startswith("panic: mismatching currency codes\n\ngoroutine ") for m in _messages(twin, "checkoutservice"))
    assert any("code = Unavailable desc = error reading from server: EOF" in m for m in _messages(twin, "frontend"))


def test_a_frontend_handler_panic_is_recovered_per_request(twin: Twin) -> None:
    """Go net/http conn.serve recovers a handler panic, logs `http: panic serving <addr>: <v>` and
    closes the connection; the process keeps running (net/http/server.go)."""
    patch = _patched(twin, "frontend", "    currency = user_currency(request)\n    ctx.log(\"info\", f\"home page",
                     "    currency = user_currency(request)\n    if currency == \"JPY\":\n        currency = currency[5]\n"
                     "    ctx.log(\"info\", f\"home page")
    assert twin.release("frontend", patch=patch, change_cause="currency").ok
    twin.advance_to(200.0)
    panics = [m for m in _messages(twin, "frontend") if m.startswith("http: panic serving ")]
    assert panics and "runtime error: index out of range [0] with length 0" in panics[-1]
    pod = [p for p in _pods(twin, "frontend") if p["metadata"]["name"].startswith(_current(twin, "frontend"))][0]
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0
    assert not twin.probe({"kind": "request", "route": "/", "currency": "JPY"})


# --- error texts per language --------------------------------------------------------------------------

def _raise_in(twin: Twin, service: str, old: str, new: str) -> None:
    """Release `new` in place of `old`, guarded so the service's unit tests (whose context has
    request id req-test-1) still pass and only live traffic meets the change."""
    indent = new[: len(new) - len(new.lstrip())]
    guarded = f"{indent}if ctx.request_id != \"req-test-1\":\n    {new}\n{indent}else:\n    {old}"
    assert twin.release(service, patch=_patched(twin, service, old, guarded), change_cause="refactor").ok
    twin.advance_to(twin.now + 180.0)


def test_aspnet_core_answers_exception_was_thrown_by_handler(twin: Twin) -> None:
    """Grpc.AspNetCore.Server: UNKNOWN "Exception was thrown by handler." and the Error log
    "Error when executing service method '{ServiceMethod}'." with the .NET exception."""
    _raise_in(twin, "cartservice", '    ctx.log("info", f"GetCartAsync called with userId={user_id}")',
              '    ctx.log("info", f"GetCartAsync called with userId={request[\'userId\']}")')
    logged = _messages(twin, "cartservice")
    assert any(m.startswith("Error when executing service method 'GetCart'.\n"
                            "System.Collections.Generic.KeyNotFoundException: The given key 'userId'") for m in logged)
    assert any("code = Unknown desc = Exception was thrown by handler." in m for m in _messages(twin, "frontend"))


def test_grpc_js_reports_a_thrown_error_without_dying(twin: Twin) -> None:
    """grpc-js server.ts handleUnary catches the throw: UNKNOWN "Server method handler threw error
    <message>", the process lives on."""
    _raise_in(twin, "currencyservice", '    ctx.log("info", "Getting supported currencies...")',
              '    ctx.log("info", "Getting supported currencies..." + request["locale"])')
    assert any("code = Unknown desc = Server method handler threw error Cannot read properties of undefined "
               "(reading 'locale')" in m for m in _messages(twin, "frontend"))
    assert all(p["status"]["containerStatuses"][0]["restartCount"] == 0 for p in _pods(twin, "currencyservice"))


def test_grpc_python_answers_exception_calling_application(twin: Twin) -> None:
    """grpc/_server.py _call_behavior: UNKNOWN "Exception calling application: <exception>", logged
    with logging.exception (the one service language where Python's words are the real ones)."""
    _raise_in(twin, "recommendationservice", '    requested = request.get("product_ids", [])',
              '    requested = request["productIds"]')
    assert any(m.startswith("Exception calling application: 'productIds'") for m in _messages(twin, "recommendationservice"))


def test_connection_texts_are_grpc_gos(twin: Twin) -> None:
    """grpc-go v1.82.0: NXDOMAIN is dropped by the DNS resolver and pick_first reports `name
    resolver error: produced zero addresses`; a Service with no ready endpoint is refused at its
    ClusterIP (`transport: Error while dialing: dial tcp <ClusterIP>:<port>: connect: connection
    refused`); Envoy's "no healthy upstream" appears nowhere."""
    twin.release("checkoutservice", env={"SHIPPING_SERVICE_ADDR": "shipping-service:50051"}, change_cause="alias")
    twin.scale("adservice", 0)
    twin.advance_to(240.0)
    # checkoutservice returns a failed step unlogged (main.go PlaceOrder): the frontend logs it
    frontend = _messages(twin, "frontend")
    assert any("code = Unavailable desc = name resolver error: produced zero addresses" in m for m in frontend)
    ip = [s for s in twin.resources("services") if s["metadata"]["name"] == "adservice"][0]["spec"]["clusterIP"]
    assert any(f'connection error: desc = "transport: Error while dialing: dial tcp {ip}:9555: connect: connection refused"'
               in m for m in _messages(twin, "frontend"))
    assert not twin.logs(contains="no healthy upstream", limit=1)
    assert not twin.logs(contains="no such host", limit=1)


def test_packet_loss_is_latency_not_resets(twin: Twin) -> None:
    """Lost segments are retransmitted by TCP (RTO 200 ms minimum, doubling): calls are late."""
    twin.chaos_start("network_loss", "cartservice", loss=0.6, peer="frontend")
    twin.advance_to(180.0)
    assert not twin.logs(contains="connection reset by peer", limit=1)
    assert max(s.e for s in twin.sli_samples(since=30.0)) == 0.0


def test_unknown_service_texts_follow_the_serving_language(twin: Twin) -> None:
    """A pod running a sibling's image answers in that image's gRPC library: grpc-go `unknown
    service hipstershop.PaymentService` (server.go), grpc-js `The server does not implement the
    method ...` (server.ts)."""
    twin.release("paymentservice", image=f"{REGISTRY}/shippingservice:v0.10.6", change_cause="image")
    twin.advance_to(240.0)
    assert any("code = Unimplemented desc = unknown service hipstershop.PaymentService" in m
               for m in _messages(twin, "frontend"))
    twin = create_backend("boutique", seed=2)
    twin.release("currencyservice", image=f"{REGISTRY}/paymentservice:v0.10.6", change_cause="image")
    twin.advance_to(240.0)
    assert any("code = Unimplemented desc = The server does not implement the method "
               "/hipstershop.CurrencyService/GetSupportedCurrencies" in m for m in _messages(twin, "frontend"))


def test_grpc_js_sends_an_error_code_outside_the_table_as_is() -> None:
    """grpc-js serverErrorToStatus (packages/grpc-js/src/server-call.ts) uses any integer `code` of
    the error as the status; paymentservice's CreditCardError has code 400
    (src/paymentservice/charge.js), which grpc-go prints as Code(400) (codes/code_string.go)."""
    err = RpcError(400, "Credit card info is invalid")
    assert str(err) == "rpc error: code = Code(400) desc = Credit card info is invalid"
    assert err.status_number == 400
    assert RpcError(14, "x").code == "UNAVAILABLE"
