"""Exporter-shaped synthetic series in which every rule of the boutique pack fires.

Series are shaped as the shipped exporters and collector configuration produce them
(`pytest_marathon/deploy/series.py`); the cluster builds every rule's condition on a timeline
(healthy, then one symptom group at a time, then healthy again), with exact values so rendered
annotations can be compared.
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_marathon.tsdb import SeriesStore

NS = "boutique"
SCRAPE = 15.0
M = 60.0
#: the span_metrics connector's default buckets (ms)
MS_BUCKETS = ("2", "4", "6", "8", "10", "50", "100", "200", "400", "800", "1000", "1400", "2000", "5000", "10000",
              "15000", "+Inf")


def _during(t: float, start_min: float, end_min: float) -> bool:
    return start_min * M <= t < end_min * M


class _Cluster:
    def __init__(self) -> None:
        self.store = SeriesStore()
        self.counters: dict[tuple, float] = {}

    def gauge(self, t: float, name: str, value: float, plain: bool = False, **labels: str) -> None:
        """`plain`: a series with no Kubernetes namespace (the collector's, a node's)."""
        self.store.append(name, labels if plain else {"namespace": NS, **labels}, t, value)

    def counter(self, t: float, name: str, per_second: float, plain: bool = False, **labels: str) -> None:
        key = (name, tuple(sorted(labels.items())))
        self.counters[key] = self.counters.get(key, 0.0) + per_second * SCRAPE
        self.gauge(t, name, self.counters[key], plain, **labels)

    def histogram(
        self, t: float, prefix: str, per_second: float, latency: float, buckets: tuple, plain: bool = False,
        **labels: str,
    ) -> None:
        for le in buckets:
            inside = le == "+Inf" or latency <= float(le)
            self.counter(t, f"{prefix}_bucket", per_second if inside else 0.0, plain, le=le, **labels)
        self.counter(t, f"{prefix}_count", per_second, plain, **labels)
        self.counter(t, f"{prefix}_sum", per_second * latency, plain, **labels)


def synthetic_store(minutes: float = 40.0) -> SeriesStore:
    c = _Cluster()
    t = 0.0
    while t <= minutes * M:
        _scrape(c, t)
        t += SCRAPE
    return c.store


def _span(c: _Cluster, t: float, per_second: float, latency: float, **labels: str) -> None:
    """One span-metrics series as the shipped collector config renders it (no namespace)."""
    labels = {"job": labels["service_name"], **labels}
    c.counter(t, "traces_span_metrics_calls_total", per_second, plain=True, **labels)
    c.histogram(t, "traces_span_metrics_duration_milliseconds", per_second, latency * 1000.0, MS_BUCKETS,
                plain=True, **labels)


def _server(c: _Cluster, t: float, rate: float, latency: float, service: str, method: str, code: str) -> None:
    error = code in ("2", "4", "12", "13", "14", "15")
    _span(c, t, rate, latency, service_name=service, span_name=method, span_kind="SPAN_KIND_SERVER",
          status_code="STATUS_CODE_ERROR" if error else "STATUS_CODE_UNSET", rpc_grpc_status_code=code)


def _scrape(c: _Cluster, t: float) -> None:
    errors = _during(t, 5, 11)
    slow = _during(t, 13, 19)
    # --- requests: frontend -> checkout -> payment; email only serves checkout ---------------
    ok_rate, bad_rate = (0.5, 0.5) if errors else (1.0, 0.0)
    latency = 3.0 if slow else 0.02
    for status, rate in (("200", ok_rate), ("500", bad_rate)):
        _span(c, t, rate, latency, service_name="frontend", span_name="frontend", span_kind="SPAN_KIND_SERVER",
              status_code="STATUS_CODE_ERROR" if status == "500" else "STATUS_CODE_UNSET",
              http_request_method="POST", http_response_status_code=status)
    code_bad = "4" if slow else "13"
    slow_bad = 0.2 if slow else 0.0
    charge, order = "hipstershop.PaymentService/Charge", "hipstershop.CheckoutService/PlaceOrder"
    _server(c, t, ok_rate - slow_bad, latency, "paymentservice", charge, "0")
    _server(c, t, bad_rate + slow_bad, latency, "paymentservice", charge, code_bad)
    _server(c, t, bad_rate, 0.01, "checkoutservice", order, "14")
    _server(c, t, ok_rate, 0.01, "checkoutservice", order, "0")
    client_bad = "4" if slow else "14"
    for code, rate in (("0", ok_rate - slow_bad), (client_bad, bad_rate + slow_bad)):
        _span(c, t, rate, latency, service_name="checkoutservice", span_name=charge, span_kind="SPAN_KIND_CLIENT",
              status_code="STATUS_CODE_UNSET" if code == "0" else "STATUS_CODE_ERROR",
              rpc_grpc_status_code=code, server_address="paymentservice")
    email_rate = 0.0 if _during(t, 13, 19) else 0.2
    _server(c, t, email_rate, 0.01, "emailservice", "hipstershop.EmailService/SendOrderConfirmation", "0")
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
    reasons = {"Progressing": ("NewReplicaSetAvailable", "ProgressDeadlineExceeded"),
               "Available": ("MinimumReplicasAvailable", "MinimumReplicasUnavailable")}
    for condition, state in (("Progressing", progressing), ("Available", condition_available)):
        reason = reasons[condition][0 if state else 1]
        for status in ("true", "false", "unknown"):
            gauge(t, "kube_deployment_status_condition", 1.0 if status == ("true" if state else "false") else 0.0,
                  deployment=name, condition=condition, status=status, reason=reason)


def _nodes_and_redis(c: _Cluster, t: float) -> None:
    pressure = _during(t, 21, 27)
    for node in ("node-a", "node-b"):
        ready = not (pressure and node == "node-b")
        for status in ("true", "false", "unknown"):
            c.gauge(t, "kube_node_status_condition", 1.0 if status == ("true" if ready else "unknown") else 0.0,
                    plain=True, node=node, condition="Ready", status=status)
    down = _during(t, 21, 27)
    redis = {"job": "redis_exporter_targets", "instance": "redis://redis-cart:6379"}
    c.gauge(t, "redis_up", 0.0 if down else 1.0, **redis)
    idle = _during(t, 29, 35)
    c.gauge(t, "redis_connected_clients", 0.0 if (down or idle) else 3.0, **redis)
    c.counter(t, "redis_acl_access_denied_auth_total", 0.5 if down else 0.0, **redis)
    c.counter(t, "redis_commands_failed_calls_total", 1.0 if down else 0.0, cmd="auth", **redis)
    c.counter(t, "redis_commands_rejected_calls_total", 1.0 if down else 0.0, cmd="hset", **redis)
    c.gauge(t, "redis_memory_max_bytes", 256 * 2**20, **redis)
    c.gauge(t, "redis_memory_used_bytes", (250 if down else 20) * 2**20, **redis)
