"""Requests flowing through the application: address resolution, service code, latency, errors.

A user request enters at the frontend's Service and each `ctx.call` resolves its address the way
a pod would (the caller's env `host:port` → Service → targetPort must equal the port the callee
listens on → a ready endpoint, round-robin). Failures carry the messages real clients print.
Latency adds up along the call path; each pod's own time is stretched by CPU queueing and
throttling measured over the previous tick. Everything observable goes to a `Sink` (telemetry, or
nothing for symptom probes).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pytest_marathon.twin.appspec import AppSpec
from pytest_marathon.twin.cluster import Cluster
from pytest_marathon.twin.datastore import DatastoreClient, RedisServer
from pytest_marathon.twin.errors import RpcError
from pytest_marathon.twin.objects import Pod
from pytest_marathon.twin.redis_config import parse_configuration
from pytest_marathon.twin.sandbox_errors import SandboxError, SandboxLimit, UnknownMethod

NETWORK_MS = 0.35
MAX_QUEUE_FACTOR = 200.0  # a saturated container: requests wait for many CFS periods
# A container whose CPU demand exceeds its limit is throttled every CFS period: only limit/demand
# of each period is usable, so its run queue serves less than arrives and the backlog grows until
# callers' deadlines cut it. A request waits behind (1 - limit/demand) of this backlog, so twice
# the limit in demand (a hog, a limit cut below the load) costs seconds, as on a cluster.
SATURATED_BACKLOG_MS = 8_000.0
# CFS bandwidth control (Linux Documentation/scheduler/sched-bwc.rst): a container may run
# limit x 100 ms in each 100 ms period. A request needing more CPU than one period's quota sits
# out the rest of each period it exhausts, even when the container is idle on average; at the
# 10m floor (1 ms per period) a 2 ms request takes a period longer.
CFS_PERIOD_MS = 100.0
ENTRY_DEADLINE_MS = 60_000.0
# Nested RPC hops one user request may take. Real call graphs are a few hops deep; a service that
# reaches itself (a misconfigured address, a loop in code) would otherwise recurse until Python's
# own limit. Past the cap the call fails the way a real loop ends: the deadline runs out.
MAX_CALL_DEPTH = 16
# RPCs one user request may make in all. A loop that keeps calling another service runs until the
# request's deadline on a cluster; here every call would also keep a span, so past the cap calls
# fail at once, as the expired deadline makes them fail there.
MAX_CALLS_PER_REQUEST = 400
LOG_LEVELS = ("debug", "info", "warning", "error")
HTTP_STATUS_OF = {"INVALID_ARGUMENT": 400, "NOT_FOUND": 404, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403}
CLUSTER_SUFFIXES = (".svc.cluster.local", ".svc")


@dataclass(frozen=True)
class EdgeEffect:
    delay_ms: float = 0.0
    loss: float = 0.0
    partitioned: bool = False


NO_EFFECT = EdgeEffect()


class Sink(Protocol):
    """Where a request's observable traces go."""

    def log(self, t: float, service: str, pod: str, level: str, message: str, trace_id: str) -> None: ...

    def server(self, service: str, method: str, code: str, seconds: float, weight: float) -> None: ...

    def client(self, service: str, peer: str, method: str, code: str, seconds: float, weight: float) -> None: ...

    def http(self, service: str, route: str, method: str, status: int, seconds: float, weight: float) -> None: ...

    def span(self, span: dict[str, Any], weight: float) -> None: ...


class NullSink:
    """Probes run real requests but must leave nothing agents could read."""

    def log(self, *args: Any) -> None:
        return None

    server = client = http = span = log


@dataclass
class Outcome:
    """What a request did, for the entry point's SLI and for probes."""

    status: int
    seconds: float
    error: str = ""
    response: Any = None


class CallContext:
    """The `ctx` service code receives; only the contract's members are public."""

    __slots__ = ("_rt", "_pod", "_spec_timeout", "_deadline_ms", "_elapsed_ms", "_work_ms", "_trace",
                 "_span_id", "_depth", "now", "request_id")

    RpcError = RpcError

    def __init__(self, rt: Runtime, pod: Pod, trace: _Trace, span_id: str, deadline_ms: float, depth: int = 1) -> None:
        self._rt = rt
        self._depth = depth
        self._pod = pod
        self._trace = trace
        self._span_id = span_id
        self._deadline_ms = deadline_ms
        self._elapsed_ms = 0.0
        self._work_ms = 0.0
        self._spec_timeout = rt.spec.deployments[pod.deployment].call_timeout_ms
        self.now = trace.t
        self.request_id = trace.request_id

    def env(self, name: str, default: Any = None) -> Any:
        return self._pod.env.get(name, default)

    def flag(self, name: str, default: Any = None) -> Any:
        return self._rt.cluster.configmaps.get("feature-flags", {}).get(name, default)

    def log(self, level: str, message: str) -> None:
        level = str(level).lower()
        if level not in LOG_LEVELS:
            level = "info"
        self._rt.sink.log(self.now, self._pod.deployment, self._pod.name, level, str(message), self._trace.trace_id)

    def work(self, ms: float) -> None:
        self._work_ms += max(0.0, float(ms))

    def sleep(self, ms: float) -> None:
        """A wait inside the handler (Go's time.Sleep): latency, no CPU demand."""
        self._elapsed_ms += max(0.0, float(ms))

    def fail(self, code: str, message: str) -> None:
        raise RpcError(code, message)

    def call(self, addr: str, method: str, request: Any = None) -> Any:
        timeout = min(self._spec_timeout, max(0.0, self._deadline_ms - self._elapsed_ms))
        return self._rt.call(self, str(addr), str(method), request if request is not None else {}, timeout)

    def datastore(self, addr: str, password: str | None = None) -> DatastoreClient:
        """Connects (and authenticates) now, as a redis client's connect does; commands reconnect.
        `addr` is a StackExchange.Redis configuration string (twin/redis_config.py): its endpoint
        is dialled, its `password=` option sent unless `password` is given."""
        rt = self._rt
        endpoint, configured = parse_configuration(str(addr))

        def connect() -> RedisServer:
            server, ms = rt.connect_datastore(self._pod, endpoint)
            self._elapsed_ms += ms
            return server

        client = DatastoreClient(connect, password if password is not None else configured)
        client._run("exists", "__connect__")
        return client


class _Trace:
    """One user request's spans (kept only when the sink records)."""

    __slots__ = ("trace_id", "request_id", "t", "spans", "_next", "calls")

    def __init__(self, trace_id: str, request_id: str, t: float) -> None:
        self.trace_id = trace_id
        self.request_id = request_id
        self.t = t
        self.spans: list[dict[str, Any]] = []
        self._next = 0
        self.calls = 0

    def new_span_id(self) -> str:
        self._next += 1
        return f"{self.trace_id[:8]}{self._next:08x}"


class Runtime:
    def __init__(
        self,
        spec: AppSpec,
        cluster: Cluster,
        seed_rng: random.Random,
        edge_effect: Callable[[str, str], EdgeEffect],
        servers: dict[str, RedisServer],
        down_datastores: set[str],
    ) -> None:
        self.spec = spec
        self.cluster = cluster
        self.rng = seed_rng
        self.edge_effect = edge_effect
        self.servers = servers
        self.down_datastores = down_datastores
        self.sink: Sink = NullSink()
        self.weight = 1.0
        self._round_robin: dict[str, int] = {}
        self._cluster_ips = {name: f"10.12.{i // 250}.{i % 250 + 10}" for i, name in enumerate(spec.services)}

    def cluster_ip(self, service: str) -> str:
        return self._cluster_ips[service]

    # --- entry ---------------------------------------------------------------------------------
    def entry(self, route: str, request: dict[str, Any], t: float, request_id: str, trace_id: str) -> tuple[Outcome, _Trace]:
        trace = _Trace(trace_id, request_id, t)
        spec = self.spec
        svc = spec.services[spec.entry_service]
        route_spec = spec.deployments[spec.entry_deployment].methods[route]
        pod = self._pick(svc.selector)
        if pod is None or pod.listen_port != svc.target_port:
            seconds = 0.001
            self.sink.http(spec.entry_deployment, route_spec.path, route_spec.http_method, 503, seconds, self.weight)
            return Outcome(503, seconds, "no healthy upstream"), trace
        code, message, response, ms = self.serve(pod, route, request, trace, "", ENTRY_DEADLINE_MS)
        status = 200
        if code != "OK":
            status = HTTP_STATUS_OF.get(code, 500)
        elif isinstance(response, dict) and isinstance(response.get("status"), int):
            status = response["status"]
        seconds = ms / 1000.0
        self.sink.http(spec.entry_deployment, route_spec.path, route_spec.http_method, status, seconds, self.weight)
        return Outcome(status, seconds, message if status >= 500 else "", response), trace

    # --- server side -------------------------------------------------------------------------------
    def serve(
        self, pod: Pod, method: str, request: Any, trace: _Trace, parent: str, deadline_ms: float, depth: int = 1
    ) -> tuple[str, str, Any, float]:
        """Run one handler in `pod` at call depth `depth` (1 = entry); returns (code, message,
        response, elapsed ms)."""
        dep = self.spec.deployments[pod.deployment]
        span_id = trace.new_span_id()
        ctx = CallContext(self, pod, trace, span_id, deadline_ms, depth)
        code, message, response = "OK", "", None
        try:
            response = pod.instance.handle(method, ctx, request)
        except RpcError as err:
            code, message = err.code, err.message
            if dep.language == "csharp":
                ctx.log("info", _aspnetcore_status_log(code, message))
        except SandboxLimit as limit:
            code, message = limit.grpc_code, f"{method}: {limit.reason}"
            ctx.log("error", f"{method} aborted: {limit.reason}")
        except UnknownMethod:
            code, message = "UNIMPLEMENTED", f"unknown method {method} for service {dep.rpc_service or dep.name}"
        except SandboxError as refusal:
            code, message = "INTERNAL", f"{method}: {refusal.reason}"
            ctx.log("error", f"{method} refused by the runtime: {refusal.reason}")
        except Exception as exc:  # noqa: BLE001 - service code may raise anything; gRPC reports UNKNOWN
            code, message = "UNKNOWN", f"{type(exc).__name__}: {exc}"
            ctx.log("error", _crash_log(dep.language, method, exc))
        method_spec = dep.methods.get(method)
        own_ms = (method_spec.base_ms if method_spec else 0.5) + ctx._work_ms
        pod.cpu_demand += own_ms / 1000.0 * self.weight
        own_ms = (own_ms * self._queue_factor(pod) + self._throttled_wait_ms(pod)
                  + self._quota_wait_ms(pod, own_ms)) * math.exp(self.rng.gauss(0.0, 0.25))
        total_ms = own_ms + ctx._elapsed_ms
        seconds = total_ms / 1000.0
        if dep.kind == "grpc":
            self.sink.server(dep.name, method, code, seconds, self.weight)
            name = f"{dep.rpc_service}/{method}"
        else:
            route = dep.methods.get(method)
            name = f"{route.http_method} {route.path}" if route else method
        self._span(
            trace,
            {
                "trace_id": trace.trace_id,
                "span_id": span_id,
                "parent_span_id": parent,
                "service": dep.name,
                "pod": pod.name,
                "name": name,
                "kind": "SPAN_KIND_SERVER",
                "start": trace.t,
                "duration_ms": round(total_ms, 3),
                "status": "STATUS_CODE_ERROR" if code != "OK" else "STATUS_CODE_UNSET",
                "status_message": f"{code}: {message}" if code != "OK" else "",
            },
        )
        return code, message, response, total_ms

    def _span(self, trace: _Trace, span: dict[str, Any]) -> None:
        trace.spans.append(span)
        self.sink.span(span, self.weight)

    def _queue_factor(self, pod: Pod) -> float:
        u = pod.utilisation
        if u >= 1.0:
            return min(MAX_QUEUE_FACTOR, 20.0 * u)
        return 1.0 / (1.0 - min(u, 0.95))

    def _quota_wait_ms(self, pod: Pod, cpu_ms: float) -> float:
        """The periods a request's own CPU time spans at the container's quota, less the first."""
        quota_ms = self.cluster.limit_cores(pod) * CFS_PERIOD_MS
        if cpu_ms <= quota_ms:
            return 0.0
        return (math.ceil(cpu_ms / quota_ms) - 1) * (CFS_PERIOD_MS - quota_ms)

    def _throttled_wait_ms(self, pod: Pod) -> float:
        """The backlog a request waits behind in a throttled container (none below the limit)."""
        u = pod.utilisation
        return SATURATED_BACKLOG_MS * (1.0 - 1.0 / u) if u > 1.0 else 0.0

    # --- client side -------------------------------------------------------------------------------
    def call(self, ctx: CallContext, addr: str, method: str, request: Any, timeout_ms: float) -> Any:
        caller = ctx._pod
        ctx._trace.calls += 1
        if ctx._trace.calls > MAX_CALLS_PER_REQUEST:
            ctx._elapsed_ms += timeout_ms
            raise RpcError("DEADLINE_EXCEEDED", "context deadline exceeded")
        peer, pod, error = self.resolve(caller, addr)
        span_id = ctx._trace.new_span_id()
        code, message, response, ms = "OK", "", None, NETWORK_MS
        if error is not None:
            code, message = "UNAVAILABLE", error
        elif ctx._depth >= MAX_CALL_DEPTH:
            code, message, ms = "DEADLINE_EXCEEDED", "context deadline exceeded", timeout_ms
        else:
            effect = self.edge_effect(caller.deployment, pod.deployment)
            ms += effect.delay_ms
            if effect.partitioned:
                code, message, ms = "DEADLINE_EXCEEDED", "context deadline exceeded", timeout_ms
            elif effect.loss and self.rng.random() < effect.loss:
                if self.rng.random() < 0.5:
                    code, message = "UNAVAILABLE", f"read tcp {caller.ip}:{40000 + int(self.rng.random() * 20000)}->{pod.ip}:{pod.listen_port}: read: connection reset by peer"
                else:
                    ms += 1000.0
            if code == "OK":
                remaining = timeout_ms - ms
                code, message, response, callee_ms = self.serve(pod, method, request, ctx._trace, span_id, remaining,
                                                                ctx._depth + 1)
                ms += callee_ms
                if ms > timeout_ms:
                    code, message, response, ms = "DEADLINE_EXCEEDED", "context deadline exceeded", None, timeout_ms
        ctx._elapsed_ms += ms
        seconds = ms / 1000.0
        self.sink.client(caller.deployment, peer, method, code, seconds, self.weight)
        rpc_service = self.spec.deployments[peer].rpc_service if peer in self.spec.deployments else ""
        self._span(
            ctx._trace,
            {
                "trace_id": ctx._trace.trace_id,
                "span_id": span_id,
                "parent_span_id": ctx._span_id,
                "service": caller.deployment,
                "pod": caller.name,
                "name": f"{rpc_service or peer}/{method}",
                "kind": "SPAN_KIND_CLIENT",
                "start": ctx.now,
                "duration_ms": round(ms, 3),
                "status": "STATUS_CODE_ERROR" if code != "OK" else "STATUS_CODE_UNSET",
                "status_message": f"{code}: {message}" if code != "OK" else "",
                "peer": addr,
            },
        )
        if code != "OK":
            raise RpcError(code, message)
        return response

    def resolve(self, caller: Pod, addr: str) -> tuple[str, Pod | None, str | None]:
        """(peer deployment or unresolved host, chosen pod, error message)."""
        host, sep, port_text = addr.rpartition(":")
        if not sep or not host:
            return addr, None, f"dial tcp: address {addr}: missing port in address"
        service_name = host
        for suffix in CLUSTER_SUFFIXES:
            if service_name.endswith(suffix):
                service_name = service_name[: -len(suffix)]
        ns_suffix = "." + self.spec.namespace
        if service_name.endswith(ns_suffix):
            service_name = service_name[: -len(ns_suffix)]
        svc = self.spec.services.get(service_name)
        if svc is None:
            return host, None, f"dial tcp: lookup {host}: no such host"
        try:
            port = int(port_text)
        except ValueError:
            return svc.selector, None, f"dial tcp: address {addr}: invalid port"
        if port != svc.port:
            return svc.selector, None, f"dial tcp {self.cluster_ip(svc.name)}:{port}: connect: connection refused"
        pod = self._pick(svc.selector)
        if pod is None:
            return svc.selector, None, "no healthy upstream"
        if not self.cluster.nodes[pod.node].ready:
            # the endpoint is still listed until the node-monitor grace period runs out, but
            # nothing answers on the dead node
            return svc.selector, None, f"dial tcp {pod.ip}:{svc.target_port}: i/o timeout"
        if pod.listen_port != svc.target_port:
            return svc.selector, None, f"dial tcp {pod.ip}:{svc.target_port}: connect: connection refused"
        return svc.selector, pod, None

    def _pick(self, deployment: str) -> Pod | None:
        ready = sorted((p for p in self.cluster.pods.values() if p.deployment == deployment and p.ready), key=lambda p: p.name)
        if not ready:
            return None
        turn = self._round_robin.get(deployment, 0)
        self._round_robin[deployment] = turn + 1
        return ready[turn % len(ready)]

    def connect_datastore(self, caller: Pod, addr: str) -> tuple[RedisServer, float]:
        peer, pod, error = self.resolve(caller, addr)
        if error is None and (pod.deployment in self.down_datastores or pod.name not in self.servers):
            error = "connect: connection refused"
        if error is None:
            effect = self.edge_effect(caller.deployment, pod.deployment)
            if effect.partitioned:
                error = "timeout"
        if error is not None:
            raise RpcError(
                "UNAVAILABLE",
                f"It was not possible to connect to the redis server(s). UnableToConnect on {addr}/Interactive, {error}",
            )
        dep = self.spec.deployments[pod.deployment]
        op_ms = float(dep.datastore.get("op_ms", 0.3))
        pod.cpu_demand += op_ms / 1000.0 * self.weight
        return self.servers[pod.name], op_ms + NETWORK_MS + self.edge_effect(caller.deployment, pod.deployment).delay_ms


def _aspnetcore_status_log(code: str, message: str) -> str:
    """ASP.NET Core's gRPC server logs every status a handler raises (category
    Grpc.AspNetCore.Server.ServerCallHandler, Information, outside the `Microsoft` filter), so a
    C# service's failures show in its own log even where its code logs nothing."""
    status = "".join(part.capitalize() for part in code.split("_"))
    return f"Error status code '{status}' with detail '{message}' raised."


def _crash_log(language: str, method: str, exc: Exception) -> str:
    """How each runtime reports an unhandled exception in a handler."""
    text = f"{type(exc).__name__}: {exc}"
    if language == "go":
        return f"panic: {exc} [recovered] in {method}"
    if language == "nodejs":
        return f"{method} request failed: Error: {exc}"
    if language == "csharp":
        return f"Unhandled exception in {method}: System.Exception: {exc}"
    if language == "java":
        return f"Exception in {method}: java.lang.RuntimeException: {exc}"
    return f"Exception in {method}: {text}"
