"""Exporter-shaped synthetic series in which every rule of the boutique pack fires.

The twin's fault runs trigger the request, span and log rules; node pressure, redis memory and
similar rules need conditions the twin's catalog does not produce, so this cluster builds them
on a timeline (healthy, then one symptom group at a time, then healthy again).
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_marathon.tsdb import SeriesStore

NS = "boutique"
SCRAPE = 15.0
M = 60.0
BUCKETS = ("0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf")
MS_BUCKETS = ("5", "10", "50", "100", "500", "1000", "2000", "5000", "+Inf")


def _during(t: float, start_min: float, end_min: float) -> bool:
    return start_min * M <= t < end_min * M


class _Cluster:
    def __init__(self) -> None:
        self.store = SeriesStore()
        self.counters: dict[tuple, float] = {}

    def gauge(self, t: float, name: str, value: float, **labels: str) -> None:
        self.store.append(name, {"namespace": NS, **labels}, t, value)

    def counter(self, t: float, name: str, per_second: float, **labels: str) -> None:
        key = (name, tuple(sorted(labels.items())))
        self.counters[key] = self.counters.get(key, 0.0) + per_second * SCRAPE
        self.gauge(t, name, self.counters[key], **labels)

    def histogram(
        self, t: float, prefix: str, per_second: float, latency: float, buckets: tuple, **labels: str
    ) -> None:
        for le in buckets:
            inside = le == "+Inf" or latency <= float(le)
            self.counter(t, f"{prefix}_bucket", per_second if inside else 0.0, le=le, **labels)
        self.counter(t, f"{prefix}_count", per_second, **labels)
        self.counter(t, f"{prefix}_sum", per_second * latency, **labels)


def synthetic_store(minutes: float = 40.0) -> SeriesStore:
    c = _Cluster()
    t = 0.0
    while t <= minutes * M:
        _scrape(c, t)
        t += SCRAPE
    return c.store


def _scrape(c: _Cluster, t: float) -> None:
    errors = _during(t, 5, 11)
    slow = _during(t, 13, 19)
    # --- requests: frontend -> checkout -> payment; email only serves checkout ---------------
    ok_rate, bad_rate = (0.5, 0.5) if errors else (1.0, 0.0)
    latency = 3.0 if slow else 0.02
    c.histogram(t, "http_server_request_duration_seconds", ok_rate, latency, BUCKETS,
                service="frontend", http_route="/cart/checkout", http_request_method="POST",
                http_response_status_code="200")
    c.histogram(t, "http_server_request_duration_seconds", bad_rate, latency, BUCKETS,
                service="frontend", http_route="/cart/checkout", http_request_method="POST",
                http_response_status_code="500")
    code_bad = "4" if slow else "13"
    slow_bad = 0.2 if slow else 0.0
    c.histogram(t, "rpc_server_call_duration_seconds", ok_rate - slow_bad, latency, BUCKETS,
                service="paymentservice", rpc_service="hipstershop.PaymentService",
                rpc_method="Charge", rpc_grpc_status_code="0")
    c.histogram(t, "rpc_server_call_duration_seconds", bad_rate + slow_bad, latency, BUCKETS,
                service="paymentservice", rpc_service="hipstershop.PaymentService",
                rpc_method="Charge", rpc_grpc_status_code=code_bad)
    c.histogram(t, "rpc_server_call_duration_seconds", bad_rate, 0.01, BUCKETS,
                service="checkoutservice", rpc_service="hipstershop.CheckoutService",
                rpc_method="PlaceOrder", rpc_grpc_status_code="14")
    c.histogram(t, "rpc_server_call_duration_seconds", ok_rate, 0.01, BUCKETS,
                service="checkoutservice", rpc_service="hipstershop.CheckoutService",
                rpc_method="PlaceOrder", rpc_grpc_status_code="0")
    client_bad = "4" if slow else "14"
    c.histogram(t, "rpc_client_call_duration_seconds", ok_rate - slow_bad, latency, BUCKETS,
                service="checkoutservice", peer_service="paymentservice", rpc_method="Charge",
                rpc_grpc_status_code="0")
    c.histogram(t, "rpc_client_call_duration_seconds", bad_rate + slow_bad, latency, BUCKETS,
                service="checkoutservice", peer_service="paymentservice", rpc_method="Charge",
                rpc_grpc_status_code=client_bad)
    email_rate = 0.0 if _during(t, 13, 19) else 0.2
    c.histogram(t, "rpc_server_call_duration_seconds", email_rate, 0.01, BUCKETS,
                service="emailservice", rpc_service="hipstershop.EmailService",
                rpc_method="SendOrderConfirmation", rpc_grpc_status_code="0")
    for status, rate in (("STATUS_CODE_UNSET", ok_rate), ("STATUS_CODE_ERROR", bad_rate)):
        c.counter(t, "traces_span_metrics_calls_total", rate, service_name="paymentservice",
                  span_name="hipstershop.PaymentService/Charge", span_kind="SPAN_KIND_SERVER",
                  status_code=status)
        c.histogram(t, "traces_span_metrics_duration_milliseconds", rate, latency * 1000,
                    MS_BUCKETS, service_name="paymentservice",
                    span_name="hipstershop.PaymentService/Charge", span_kind="SPAN_KIND_SERVER",
                    status_code=status)
    c.counter(t, "log_lines_total", 2.0 if errors else 0.0, service="paymentservice",
              pod="paymentservice-5d8f7b6c4a-x2k9q", level="error")
    c.counter(t, "log_lines_total", 1.0, service="paymentservice",
              pod="paymentservice-5d8f7b6c4a-x2k9q", level="info")
    _workloads(c, t)
    _nodes_and_redis(c, t)


def _workloads(c: _Cluster, t: float) -> None:
    broken = _during(t, 5, 11)
    cart_pod = "cartservice-7c9d8e6f5a-abcde"
    restarts = sum(1 for m in (6, 8, 10) if t >= m * M)
    c.gauge(t, "kube_pod_container_status_restarts_total", float(restarts), pod=cart_pod,
            container="server")
    c.gauge(t, "kube_pod_container_status_waiting_reason", 1.0 if broken else 0.0,
            pod=cart_pod, container="server", reason="CrashLoopBackOff")
    c.gauge(t, "kube_pod_container_status_last_terminated_reason", 1.0 if t >= 6 * M else 0.0,
            pod=cart_pod, container="server", reason="OOMKilled")
    c.gauge(t, "kube_pod_status_ready", 0.0 if broken else 1.0, pod=cart_pod, condition="true")
    memory_limit = 128 * 2**20
    memory = memory_limit * (0.5 + 0.45 * min(1.0, max(0.0, (t - 4 * M) / (3 * M)))) if broken else memory_limit * 0.5
    c.gauge(t, "container_memory_working_set_bytes", memory, pod=cart_pod, container="server")
    c.gauge(t, "container_spec_memory_limit_bytes", float(memory_limit), pod=cart_pod,
            container="server")
    cpu = 0.29 if broken else 0.05
    c.counter(t, "container_cpu_usage_seconds_total", cpu, pod=cart_pod, container="server")
    c.counter(t, "container_cpu_cfs_periods_total", 10.0, pod=cart_pod, container="server")
    c.counter(t, "container_cpu_cfs_throttled_periods_total", 5.0 if broken else 0.0,
              pod=cart_pod, container="server")
    c.gauge(t, "kube_pod_container_resource_limits", 0.3, pod=cart_pod, container="server",
            resource="cpu", unit="core")
    available = 0.0 if broken else 1.0
    _deployment(c, t, "cartservice", spec=1, available=available, generation=1, observed=1,
                updated=1, progressing=True, condition_available=not broken)
    email_spec = 0 if _during(t, 13, 19) else 1
    _deployment(c, t, "emailservice", spec=email_spec, available=float(email_spec),
                generation=2 if t >= 13 * M else 1, observed=2 if t >= 13 * M else 1,
                updated=email_spec, progressing=True, condition_available=True)
    stuck = _during(t, 13, 19)
    _deployment(c, t, "shippingservice", spec=1, available=1.0, generation=3 if stuck else 2,
                observed=2, updated=0 if stuck else 1, progressing=not stuck,
                condition_available=True)
    ship_pod = "shippingservice-6b7c8d9e0f-zzzzz"
    c.gauge(t, "kube_pod_container_status_waiting_reason", 1.0 if stuck else 0.0,
            pod=ship_pod, container="server", reason="ImagePullBackOff")


def _deployment(
    c: _Cluster, t: float, name: str, *, spec: int, available: float, generation: int,
    observed: int, updated: int, progressing: bool, condition_available: bool,
) -> None:
    gauge: Callable[..., None] = c.gauge
    gauge(t, "kube_deployment_spec_replicas", float(spec), deployment=name)
    gauge(t, "kube_deployment_status_replicas_available", available, deployment=name)
    gauge(t, "kube_deployment_status_replicas_unavailable", float(spec) - available if spec else 0.0, deployment=name)
    gauge(t, "kube_deployment_status_replicas_updated", float(updated), deployment=name)
    gauge(t, "kube_deployment_metadata_generation", float(generation), deployment=name)
    gauge(t, "kube_deployment_status_observed_generation", float(observed), deployment=name)
    for condition, state in (("Progressing", progressing), ("Available", condition_available)):
        for status in ("true", "false"):
            gauge(t, "kube_deployment_status_condition", 1.0 if (status == "true") == state else 0.0,
                  deployment=name, condition=condition, status=status)


def _nodes_and_redis(c: _Cluster, t: float) -> None:
    pressure = _during(t, 21, 27)
    for node in ("node-a", "node-b"):
        bad = pressure and node == "node-b"
        for condition in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
            healthy_true = condition == "Ready"
            is_true = (not healthy_true) if bad else healthy_true
            for status in ("true", "false"):
                c.gauge(t, "kube_node_status_condition",
                        1.0 if (status == "true") == is_true else 0.0,
                        node=node, condition=condition, status=status)
    down = _during(t, 21, 27)
    c.gauge(t, "redis_up", 0.0 if down else 1.0, service="redis-cart")
    idle = _during(t, 29, 35)
    c.gauge(t, "redis_connected_clients", 0.0 if (down or idle) else 3.0, service="redis-cart")
    c.counter(t, "redis_rejected_connections_total", 0.5 if down else 0.0, service="redis-cart")
    c.counter(t, "redis_commands_failed_total", 1.0 if down else 0.0, service="redis-cart")
    c.gauge(t, "redis_memory_max_bytes", 256 * 2**20, service="redis-cart")
    c.gauge(t, "redis_memory_used_bytes", (250 if down else 20) * 2**20, service="redis-cart")
