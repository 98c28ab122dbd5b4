"""Requests flowing through the application: address resolution, service code, latency, errors.

A user request enters at the frontend's Service and each `ctx.call` resolves its address the way
a pod would (the caller's env `host:port` → Service → targetPort must equal the port the callee
listens on → a ready endpoint, round-robin). Failures carry the messages the caller's and the
callee's gRPC libraries print (`rpctexts`); an exception in a handler is reported as the
service's own runtime reports it, and a Go gRPC server dies of it (`langerrors`).

No call has a deadline unless the calling code sets one (`ctx.call(..., timeout_ms=...)`, as the
frontend's 100 ms for ads in upstream `src/frontend/rpc.go` `getAd`): Online Boutique's Go code
passes the HTTP request's context, which carries no deadline, and checkoutservice calls with
`context.TODO()`. A slow dependency therefore makes pages slow, not failed. The user's client is
what gives up: the load generator's locust `FastHttpUser` waits 60 s (`network_timeout`,
locust/contrib/fasthttp.py); Go's net/http then cancels the request's context, so calls still in
flight fail with `context canceled`.
Latency adds up along the call path; each pod's own time is stretched by CPU queueing and
throttling measured over the previous tick. Everything observable goes to a `Sink` (telemetry, or
nothing for symptom probes).
"""

from __future__ import annotations

import functools
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit

from pytest_marathon.twin import httptexts, instrumentation, langerrors, routing, rpctexts
from pytest_marathon.twin.appspec import AppSpec
from pytest_marathon.twin.cluster import Cluster
from pytest_marathon.twin.datastore import DatastoreClient, RedisServer
from pytest_marathon.twin.errors import HttpError, MemcacheError, MongoError, RpcError, SqlError
from pytest_marathon.twin.kafka import Broker, KafkaProducer
from pytest_marathon.twin.memcache import MemcachedServer
from pytest_marathon.twin.mongoclient import MongoClient, parse_uri
from pytest_marathon.twin.mongostore import MongoServer
from pytest_marathon.twin.mysqlclient import is_jdbc_mysql, parse_jdbc
from pytest_marathon.twin.objects import Pod
from pytest_marathon.twin.redis_config import parse_configuration
from pytest_marathon.twin.sandbox_errors import SandboxError, SandboxLimit, UnknownMethod
from pytest_marathon.twin.sqlstore import PgServer, SqlClient, parse_dsn

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
# locust FastHttpUser network_timeout (locust 2.43.0, the loadgenerator's requirements.txt)
LOAD_CLIENT_TIMEOUT_MS = 60_000.0
# Nested RPC hops one user request may take. Real call graphs are a few hops deep; a service that
# reaches itself (a misconfigured address, a loop in code) would otherwise recurse until Python's
# own limit. Past the cap the call hangs the way a real loop does, until the request gives up.
MAX_CALL_DEPTH = 16
# RPCs one user request may make in all. A loop that keeps calling another service runs until the
# request gives up on a cluster; here every call would also keep a span, so past the cap the
# request's remaining time is spent at once and calls fail as the cancelled context makes them.
MAX_CALLS_PER_REQUEST = 400
LOG_LEVELS = ("debug", "info", "warning", "error")
# HTTP servers whose handlers are not cancelled when the client goes away: a Next.js API route
# (Node's `req` 'close' event cancels nothing the handler awaits; grpc-js calls made without a
# deadline or an AbortSignal run to their end), Sinatra on Puma and Slim on ReactPHP (the demo's
# handlers take no cancellation). Go's net/http cancels the request's context, and actix-web drops
# the handler's future, so their calls end with the client's.
UNCANCELLED_HTTP_SERVERS = ("nodejs", "ruby", "php")
HTTP_STATUS_OF = {"INVALID_ARGUMENT": 400, "NOT_FOUND": 404, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403}
CLUSTER_SUFFIXES = (".svc.cluster.local", ".svc")


@dataclass(frozen=True)
class EdgeEffect:
    delay_ms: float = 0.0
    loss: float = 0.0
    partitioned: bool = False


NO_EFFECT = EdgeEffect()


def _split_url(url: str) -> tuple[str, int, str, tuple[tuple[str, str], ...]]:
    """(host, port, path, query pairs) of an HTTP client's URL, as urllib parses it."""
    split = urlsplit(url)
    return (split.hostname or "", split.port or (443 if split.scheme == "https" else 80),
            split.path or "/", tuple(parse_qsl(split.query)))


#: Services call the same URLs all run long: each distinct one is parsed once (a URL that does
#: not parse raises every time, as an exception is never cached).
_split_known_url = functools.lru_cache(maxsize=16_384)(_split_url)


@dataclass(frozen=True)
class DialFailure:
    """Why no connection can be made: `refused`, `nxdomain` or `timeout` (nothing answers)."""

    kind: str
    ip: str = ""
    port: int = 0
    host: str = ""
    addr: str = ""


class Sink(Protocol):
    """Where a request's observable traces go."""

    def log(self, t: float, service: str, pod: str, level: str, message: str, trace_id: str) -> None: ...

    def server(self, service: str, method: str, code: str, seconds: float, weight: float) -> None: ...

    def client(self, service: str, peer: str, method: str, code: str, seconds: float, weight: float) -> None: ...

    def http(self, service: str, route: str, method: str, status: int, seconds: float, weight: float) -> None: ...

    def span(self, span: dict[str, Any], weight: float, traced: bool = True) -> None:
        """A finished span; `traced` False: its service exports none (only probes may read it)."""


class NullSink:
    """Probes run real requests but must leave nothing agents could read."""

    def log(self, *args: Any) -> None:
        return None

    server = client = http = span = log


@dataclass
class Outcome:
    """What a request did, for the entry point's SLI and for probes. `status` 0: no HTTP
    response reached the client (refused, connection dropped, or the client timed out)."""

    status: int
    seconds: float
    error: str = ""
    response: Any = None

    @property
    def failed(self) -> bool:
        return self.status == 0 or self.status >= 400


class ContainerExit(Exception):  # noqa: N818 - named after what it does, as `SystemExit`
    """Raised by service code (`raise ctx.Exit(1)`) for a process that exits on purpose, as
    logrus `log.Fatalf` does after logging its message."""

    def __init__(self, code: int = 1) -> None:
        super().__init__(code)
        self.code = int(code)


class CallContext:
    """The `ctx` service code receives; only the contract's members are public."""

    __slots__ = ("_rt", "_pod", "_deadline_ms", "_deadline_set", "_elapsed_ms", "_work_ms", "_trace",
                 "_span_id", "_depth", "now", "request_id")

    RpcError = RpcError
    HttpError = HttpError
    SqlError = SqlError
    MemcacheError = MemcacheError
    MongoError = MongoError
    Exit = ContainerExit

    def __init__(self, rt: Runtime, pod: Pod, trace: _Trace, span_id: str, deadline_ms: float, depth: int = 1,
                 deadline_set: bool = False) -> None:
        self._rt = rt
        self._depth = depth
        self._pod = pod
        self._trace = trace
        self._span_id = span_id
        # how long this handler has before its context ends, and whether that end is a deadline
        # some caller set (DEADLINE_EXCEEDED) or the user's client giving up (Canceled)
        self._deadline_ms = deadline_ms
        self._deadline_set = deadline_set
        self._elapsed_ms = 0.0
        self._work_ms = 0.0
        self.now = trace.t
        self.request_id = trace.request_id

    def env(self, name: str, default: Any = None) -> Any:
        return self._pod.env.get(name, default)

    def flag(self, name: str, default: Any = None) -> Any:
        return self._rt.flag(self._pod, name, default)

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

    def call(self, addr: str, method: str, request: Any = None, timeout_ms: float | None = None) -> Any:
        """One RPC. `timeout_ms` is a deadline the calling code sets (Go's context.WithTimeout);
        without it the call inherits only this handler's own deadline, if any."""
        remaining = max(0.0, self._deadline_ms - self._elapsed_ms)
        limit, is_deadline = remaining, self._deadline_set
        if timeout_ms is not None and float(timeout_ms) < remaining:
            limit, is_deadline = max(0.0, float(timeout_ms)), True
        return self._rt.call(self, str(addr), str(method), request if request is not None else {}, limit,
                             is_deadline)

    def http(self, method: str, url: str, body: Any = None, timeout_ms: float | None = None) -> dict[str, Any]:
        """One HTTP request; every status is returned, a transport failure raises `HttpError`."""
        remaining = max(0.0, self._deadline_ms - self._elapsed_ms)
        limit, is_deadline = remaining, self._deadline_set
        if timeout_ms is not None and float(timeout_ms) < remaining:
            limit, is_deadline = max(0.0, float(timeout_ms)), True
        return self._rt.http_call(self, str(method).upper(), str(url), body, limit, is_deadline)

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


    def kafka(self, addr: str) -> KafkaProducer:
        """A Kafka producer (sarama's async producer in checkout); `send` publishes one record
        and returns its offset, or raises `RpcError("UNAVAILABLE", <sarama text>)`."""
        rt = self._rt

        def send(topic: str, value: Any, key: str | None, headers: dict[str, str] | None) -> int:
            return rt.kafka_send(self, str(addr), topic, value, key, headers)

        return KafkaProducer(send)

    def sql(self, dsn: str) -> SqlClient:
        """A PostgreSQL handle from the DSN (URL or keyword form), or a MySQL one from a JDBC URL
        (`jdbc:mysql://host:3306/db`, the user and password from SPRING_DATASOURCE_*). Like Go's `sql.Open` and an
        EF Core context it does not connect yet: each statement connects (and authenticates) on the
        server the address resolves to at that moment, so a failure surfaces at the first
        statement (`db.Ping()` is a `SELECT 1`), as the unit-test double's does."""
        rt = self._rt
        if is_jdbc_mysql(str(dsn)):
            # a Spring datasource: MySQL, the credentials from SPRING_DATASOURCE_* (mysqlclient.py)
            url = parse_jdbc(str(dsn), self._pod.env)

            def run_mysql(sql: str, params: tuple[Any, ...]) -> tuple[list[dict[str, Any]], int]:
                return rt.mysql_run(self, url, sql, params)

            return SqlClient(run_mysql)
        parsed = parse_dsn(str(dsn))

        def run(sql: str, params: tuple[Any, ...]) -> tuple[list[dict[str, Any]], int]:
            return rt.sql_run(self, parsed, sql, params)

        return SqlClient(run)

    def mongo(self, uri: str) -> MongoClient:
        """A MongoDB client from a connection string (`mongodb://user:pass@host:27017/?authSource=
        admin`). Like `mongo.Connect` and a Spring MongoTemplate it does not connect yet: each
        operation selects the server and authenticates, so failures surface at the first one."""
        rt = self._rt
        parsed = parse_uri(str(uri))

        def run(db: str, command: dict[str, Any]) -> dict[str, Any]:
            return rt.mongo_run(self, parsed, db, command)

        return MongoClient(run, parsed.database)


    def memcached(self, servers: str, timeout_ms: float | None = None, strict: bool = False) -> Any:
        """A memcached client over `servers` (`host:port` or a comma list, as the apps' config
        gives it), in the caller's client library's words (`twin/memcache_client.py`: gomemcache
        for Go and the rest, libmemcached for C++). The list is resolved now, as gomemcache's
        `SetServers` does: a name that does not resolve leaves `memcache.New` with no servers,
        and with `strict` raises at once (hotelReservation's `tune.NewMemCClient2` panics on it).
        `timeout_ms` is the client's own timeout (gomemcache `Client.Timeout`, 500 ms default)."""
        from pytest_marathon.twin import memcache_client
        return memcache_client.open_client(self._rt, self, str(servers), timeout_ms, bool(strict))


class _Trace:
    """One user request's spans (kept only when the sink records)."""

    __slots__ = ("trace_id", "request_id", "t", "spans", "_next", "calls", "dropped")

    def __init__(self, trace_id: str, request_id: str, t: float) -> None:
        self.dropped = False  # the entry handler panicked: net/http closed the connection
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
        edge_effect: Callable[..., EdgeEffect],
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
        # False while a symptom probe runs: probes watch, they never end a container's process
        self.crashes = True
        self._round_robin: dict[str, int] = {}
        # Kafka brokers and PostgreSQL servers by pod name (the engine fills them at start)
        self.brokers: dict[str, Broker] = {}
        self.pg_servers: dict[str, PgServer] = {}
        self.mysql_servers: dict[str, Any] = {}
        self.memcached: dict[str, MemcachedServer] = {}
        self.mongo_servers: dict[str, MongoServer] = {}
        self._cluster_ips = {name: f"10.12.{i // 250}.{i % 250 + 10}" for i, name in enumerate(spec.services)}
        # an app whose HTTP services get structured requests and report HTTP spans (astronomy)
        self.structured_http = bool(spec.load.requests)
        self._prefer_close = {svc.selector for svc in spec.services.values()
                              if svc.traffic_distribution == "PreferClose"}
        self._flag_cache: tuple[str, dict[str, Any]] | None = None
        self._addresses: dict[tuple[str, str], tuple[str, str, int | None]] = {}

    def cluster_ip(self, service: str) -> str:
        return self._cluster_ips[service]

    # --- entry ---------------------------------------------------------------------------------
    def entry(self, route: str, request: dict[str, Any], t: float, request_id: str, trace_id: str) -> tuple[Outcome, _Trace]:
        trace = _Trace(trace_id, request_id, t)
        spec = self.spec
        svc = spec.services[spec.entry_service]
        if self.structured_http:
            return self._entry_http(svc, request, trace)
        route_spec = spec.deployments[spec.entry_deployment].methods[route]
        pod = self._pick(svc.selector)
        if pod is None or pod.listen_port != svc.target_port:
            # kube-proxy rejects a connection to a Service with no ready endpoint (or the pod
            # resets it): the client gets no HTTP response and the server records nothing
            return Outcome(0, 0.001, f"dial tcp {self.cluster_ip(svc.name)}:{svc.port}: connect: connection refused"), trace
        code, message, response, ms = self.serve(pod, route, request, trace, "", LOAD_CLIENT_TIMEOUT_MS)
        status = 200
        if code != "OK":
            status = HTTP_STATUS_OF.get(code, 500)
        elif isinstance(response, dict) and isinstance(response.get("status"), int):
            status = response["status"]
        seconds = ms / 1000.0
        if not trace.dropped:
            # otelhttp records the request after the handler returns; a panicking one records nothing
            self.sink.http(spec.entry_deployment, route_spec.path, route_spec.http_method, status, seconds, self.weight)
        if trace.dropped:
            return Outcome(0, seconds, "EOF"), trace
        if ms >= LOAD_CLIENT_TIMEOUT_MS:
            return Outcome(0, LOAD_CLIENT_TIMEOUT_MS / 1000.0, "timed out"), trace
        return Outcome(status, seconds, message if status >= 500 else "", response), trace

    def _entry_http(self, svc: Any, request: dict[str, Any], trace: _Trace) -> tuple[Outcome, _Trace]:
        """A load-generator request to the entry Service, from the entry zone (the active site)."""
        zone = self.spec.zones.entry
        pod = self._pick(svc.selector, zone)
        if pod is None or pod.listen_port != svc.target_port:
            return Outcome(0, 0.001, f"dial tcp {self.cluster_ip(svc.name)}:{svc.port}: connect: connection refused"), trace
        crossing = self._crossing_ms(zone, pod)
        status, body, ms, failure = self._serve_http(pod, request, trace, "", LOAD_CLIENT_TIMEOUT_MS - crossing)
        ms += crossing
        seconds = ms / 1000.0
        if failure or trace.dropped:
            return Outcome(0, seconds, failure or "EOF"), trace
        if ms >= LOAD_CLIENT_TIMEOUT_MS:
            return Outcome(0, LOAD_CLIENT_TIMEOUT_MS / 1000.0, "timed out"), trace
        return Outcome(status, seconds, str(body)[:300] if status >= 500 else "", body), trace

    def _serve_http(self, pod: Pod, request: dict[str, Any], trace: _Trace, parent: str, deadline_ms: float,
                    depth: int = 1, deadline_set: bool = False, client: str = "go") -> tuple[int, Any, float, str]:
        """(status, body, ms, transport failure) of one HTTP request served by `pod`."""
        dep = self.spec.deployments[pod.deployment]
        route, params = routing.match(dep.methods, str(request.get("method", "GET")), str(request.get("path", "/")))
        if route is None:
            # the framework's own 404/405, no handler runs
            return int(params), "Not Found" if params == 404 else "Method Not Allowed", NETWORK_MS, ""
        request = {**request, "params": params}
        code, message, response, ms = self.serve(pod, route, request, trace, parent, deadline_ms, depth,
                                                 deadline_set, client=client)
        if trace.dropped and depth > 1:
            trace.dropped = False
            return 0, None, ms, "reset"
        status, body = _http_answer(code, message, response)
        return status, body, ms, ""

    # --- server side -------------------------------------------------------------------------------
    def serve(
        self, pod: Pod, method: str, request: Any, trace: _Trace, parent: str, deadline_ms: float, depth: int = 1,
        deadline_set: bool = False, client: str = "go", called: str = "",
    ) -> tuple[str, str, Any, float]:
        """Run one handler in `pod` at call depth `depth` (1 = entry); returns (code, message,
        response, elapsed ms). `client` is the caller's language (it words a dropped connection),
        `called` the gRPC service the caller asked for (a pod may serve another one)."""
        dep = self.spec.deployments[pod.deployment]
        span_id = trace.new_span_id()
        if self.structured_http and dep.kind == "http" and dep.language in UNCANCELLED_HTTP_SERVERS:
            # the handler runs on when its client gives up: its own calls are bounded by nothing
            # but the load client's patience; the caller alone stops waiting
            deadline_ms, deadline_set = max(deadline_ms, LOAD_CLIENT_TIMEOUT_MS), False
        ctx = CallContext(self, pod, trace, span_id, deadline_ms, depth, deadline_set)
        code, message, response = "OK", "", None
        hung = False
        try:
            response = pod.instance.handle(method, ctx, request)
        except RpcError as err:
            code, message = err.code, err.message
            if err.from_call and dep.language in ("python", "java"):
                # a client error escaping the handler is just an exception to grpcio and grpc-java
                code, message = self._handler_failure(pod, dep, method, err, trace, ctx, client, _path_of(request))
            elif dep.language == "csharp":
                ctx.log("info", _aspnetcore_status_log(code, message))
        except SandboxLimit as limit:
            if limit.kind == "steps":
                # a handler that never returns: the caller waits until its context ends
                hung = True
                code, message = "DEADLINE_EXCEEDED" if deadline_set else "CANCELLED", ""
            elif limit.kind == "allocation":
                code, message = "UNAVAILABLE", rpctexts.server_died(client)
                self._exit(pod, "OOMKilled", 137, trace.t, "allocation beyond the memory limit")
            else:
                code, message = self._handler_failure(pod, dep, method, RecursionError(limit.reason), trace, ctx,
                                                     client)
        except UnknownMethod:
            # the pod may run another service's image: that image's gRPC library answers
            image = self._image_spec(pod) or dep
            served = image.rpc_service or image.name
            code = "UNIMPLEMENTED"
            message = rpctexts.unimplemented(image.language, called or dep.rpc_service or served, method, served)
        except SandboxError as refusal:
            code, message = "INTERNAL", f"{method}: {refusal.reason}"
            ctx.log("error", f"{method} refused by the runtime: {refusal.reason}")
        except ContainerExit as exit_:
            code, message = "UNAVAILABLE", rpctexts.server_died(client)
            self._exit(pod, "Error", exit_.code, trace.t, "exited")
        except Exception as exc:  # noqa: BLE001 - service code may raise anything; its runtime reports it
            code, message = self._handler_failure(pod, dep, method, exc, trace, ctx, client, _path_of(request))
        method_spec = dep.methods.get(method)
        own_ms = (method_spec.base_ms if method_spec else 0.5) + ctx._work_ms
        pod.cpu_demand += own_ms / 1000.0 * self.weight
        own_ms = (own_ms * self._queue_factor(pod) + self._throttled_wait_ms(pod)
                  + self._quota_wait_ms(pod, own_ms)) * math.exp(self.rng.gauss(0.0, 0.25))
        total_ms = own_ms + ctx._elapsed_ms
        if hung:
            total_ms = max(total_ms, deadline_ms)
        seconds = total_ms / 1000.0
        attributes: dict[str, Any] = {}
        if dep.kind == "grpc":
            self.sink.server(dep.name, method, code, seconds, self.weight)
            name = f"{dep.rpc_service}/{method}"
            status = instrumentation.grpc_span_status("SPAN_KIND_SERVER", code, dep.language)
            attributes = instrumentation.grpc_attributes(code, dep.language)
        else:
            route = dep.methods.get(method)
            name = f"{route.http_method} {route.path}" if route else method
            status = "STATUS_CODE_ERROR" if code != "OK" else "STATUS_CODE_UNSET"
            if self.structured_http and isinstance(request, dict):
                http_method = str(request.get("method", "GET"))
                if route is not None and route.http_method == "*":
                    name = http_method
                elif route is not None:
                    name = f"{http_method} {route.path}"
                http_status, _body = _http_answer(code, message, response)
                status = "STATUS_CODE_ERROR" if http_status >= 500 else "STATUS_CODE_UNSET"
                attributes = {"http.request.method": http_method, "http.response.status_code": str(http_status)}
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
                "status": status,
                "status_message": f"{code}: {message}" if code != "OK" else "",
                **({"attributes": attributes} if attributes else {}),
            },
            dep.traced,
        )
        return code, message, response, total_ms

    def _handler_failure(self, pod: Pod, dep: Any, method: str, exc: BaseException, trace: _Trace,
                         ctx: CallContext, client: str, path: str = "") -> tuple[str, str]:
        """An exception escaped the handler: the service's server framework reports it (and a Go
        gRPC server dies of it)."""
        goroutine = 20 + trace.calls * 3 + len(trace.spans)
        peer = f"10.{12 + goroutine % 3}.{goroutine % 250}.{goroutine % 200 + 2}:{40000 + goroutine * 7 % 20000}"
        failure = langerrors.handler_failure(dep.language, dep.kind, method, exc, goroutine=goroutine, peer=peer,
                                             path=path, now_ms=int(trace.t * 1000))
        for level, line in failure.logs:
            ctx.log(level, line)
        if failure.no_response:
            trace.dropped = True
        if failure.exit_code is not None:
            self._exit(pod, "Error", failure.exit_code, trace.t, failure.logs[0][1].split("\n", 1)[0])
            return failure.code, rpctexts.server_died(client)
        return failure.code, failure.description

    def _image_spec(self, pod: Pod) -> Any:
        """The deployment whose image (repository) the pod runs, if it is one of the app's."""
        repo = pod.template.image.rsplit(":", 1)[0]
        return next((d for d in self.spec.deployments.values() if d.image.rsplit(":", 1)[0] == repo), None)

    def _exit(self, pod: Pod, reason: str, exit_code: int, t: float, detail: str) -> None:
        """The container's process ended while serving; the kubelet restarts it at its next sync
        (back-off rules in `Cluster.terminate`). Probes only watch: they never end a process."""
        if self.crashes and pod.running:
            self.cluster.terminate(pod, reason, exit_code, t, detail=detail)

    def _span(self, trace: _Trace, span: dict[str, Any], traced: bool = True) -> None:
        """A finished span. One of a service that does not trace (`traced` False) exists for the
        twin's own symptom probes only: the trace and the telemetry sink never see it."""
        if traced:
            trace.spans.append(span)
        self.sink.span(span, self.weight, traced)

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

    def run_queue_wait_ms(self, pod: Pod) -> float:
        """What a cheap request (a health check) waits before it runs, at the pod's last load."""
        return self._throttled_wait_ms(pod)

    def _throttled_wait_ms(self, pod: Pod) -> float:
        """The backlog a request waits behind in a throttled container (none below the limit)."""
        u = pod.utilisation
        return SATURATED_BACKLOG_MS * (1.0 - 1.0 / u) if u > 1.0 else 0.0

    # --- client side -------------------------------------------------------------------------------
    def call(self, ctx: CallContext, addr: str, method: str, request: Any, limit_ms: float,
             is_deadline: bool = False) -> Any:
        """One RPC from `ctx`'s pod. `limit_ms` is how long the call may take before its context
        ends: a deadline (DEADLINE_EXCEEDED) or the request's cancellation (Canceled)."""
        caller = ctx._pod
        client = self.spec.deployments[caller.deployment].language
        ctx._trace.calls += 1
        ended = ("DEADLINE_EXCEEDED", rpctexts.deadline(client)) if is_deadline else \
            ("CANCELLED", rpctexts.canceled(client))
        if ctx._trace.calls > MAX_CALLS_PER_REQUEST or limit_ms <= 0.0:
            ctx._elapsed_ms += max(0.0, limit_ms)
            raise RpcError(*ended, from_call=True)
        peer, pod, failure = self.resolve(caller, addr)
        span_id = ctx._trace.new_span_id()
        code, message, response, ms = "OK", "", None, NETWORK_MS
        if failure is not None:
            code, message, ms = self._dial_failure(client, failure, limit_ms, ended)
        elif ctx._depth >= MAX_CALL_DEPTH:
            (code, message), ms = ended, limit_ms
        else:
            effect = self.edge(caller, pod)
            ms += effect.delay_ms + self._crossing_ms(self.zone_of(caller), pod)
            if effect.partitioned:
                # packets vanish on an open connection; nothing ends the call but its context
                (code, message), ms = ended, limit_ms
            elif effect.loss and self.rng.random() < effect.loss:
                # TCP retransmits a lost segment after the retransmission timeout (200 ms minimum,
                # doubling); the call is late, not failed
                ms += 200.0 * (2 ** int(self.rng.random() * 3))
            if code == "OK":
                remaining = limit_ms - ms
                rpc_service = self.spec.deployments[pod.deployment].rpc_service
                called = self.spec.deployments[peer].rpc_service if peer in self.spec.deployments else rpc_service
                code, message, response, callee_ms = self.serve(
                    pod, method, request, ctx._trace, span_id, remaining, ctx._depth + 1, is_deadline,
                    client=client, called=called)
                ms += callee_ms
                if ms >= limit_ms:
                    (code, message), response, ms = ended, None, limit_ms
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
                "status": instrumentation.grpc_span_status("SPAN_KIND_CLIENT", code, client),
                "status_message": f"{code}: {message}" if code != "OK" else "",
                "attributes": instrumentation.grpc_attributes(code, client),
                "peer": addr,
            },
            self.spec.deployments[caller.deployment].traced,
        )
        if code != "OK":
            raise RpcError(code, message, from_call=True)
        return response

    @staticmethod
    def _dial_failure(client: str, failure: DialFailure, limit_ms: float,
                      ended: tuple[str, str]) -> tuple[str, str, float]:
        """(code, message, ms) of a call whose connection cannot be made."""
        if failure.kind == "refused":
            return "UNAVAILABLE", rpctexts.refused(client, failure.ip, failure.port), NETWORK_MS
        if failure.kind == "nxdomain":
            return "UNAVAILABLE", rpctexts.no_such_host(client, failure.host, failure.addr), 0.05
        # nothing answers the SYN: the dial waits out grpc's connect timeout, or the call's context
        if limit_ms <= rpctexts.CONNECT_TIMEOUT_MS:
            return ended[0], ended[1], limit_ms
        return "UNAVAILABLE", rpctexts.dial_timeout(client, failure.ip, failure.port), rpctexts.CONNECT_TIMEOUT_MS

    def resolve(self, caller: Pod, addr: str) -> tuple[str, Pod | None, DialFailure | None]:
        """(peer deployment or unresolved host, chosen pod, why no connection can be made)."""
        host, service_name, port = self._parse_address(addr)
        svc = self.spec.services.get(service_name)
        if svc is None or not host:
            return host, None, DialFailure("nxdomain", host=host, addr=addr)
        ip = self.cluster_ip(svc.name)
        if port is None:
            return svc.selector, None, DialFailure("nxdomain", host=host, addr=addr)
        if port != svc.port:
            # iptables kube-proxy has no rule for a port the Service does not define: the SYN to
            # the ClusterIP is dropped and the dial hangs (kubernetes/kubernetes#22952)
            return svc.selector, None, DialFailure("timeout", ip=ip, port=port)
        pod = self._pick(svc.selector, self.zone_of(caller) if caller.node in self.cluster.nodes else "")
        if pod is None:
            # a Service with no ready endpoint: kube-proxy's REJECT rule refuses the connection
            return svc.selector, None, DialFailure("refused", ip=ip, port=port)
        if not self.cluster.nodes[pod.node].ready:
            # the endpoint is still listed until the node-monitor grace period runs out, but
            # nothing answers on the dead node
            return svc.selector, None, DialFailure("timeout", ip=ip, port=port)
        if pod.listen_port != svc.target_port:
            return svc.selector, None, DialFailure("refused", ip=ip, port=port)
        return svc.selector, pod, None

    def service_for(self, host: str) -> Any:
        """The Service a host name resolves to in the app's namespace (short, `.svc` or
        `.svc.cluster.local` forms), or None (the name does not resolve)."""
        return self.spec.services.get(self._service_name(host))

    def _service_name(self, host: str) -> str:
        service_name = host
        for suffix in CLUSTER_SUFFIXES:
            if service_name.endswith(suffix):
                service_name = service_name[: -len(suffix)]
        ns_suffix = "." + self.spec.namespace
        if service_name.endswith(ns_suffix):
            service_name = service_name[: -len(ns_suffix)]
        return service_name

    def _parse_address(self, addr: str) -> tuple[str, str, int | None]:
        """(host, Service name it names, port or None when not a number) of a dialled address;
        the few addresses of an app are dialled on every call, so each is parsed once."""
        key = (addr, self.spec.namespace)
        parsed = self._addresses.get(key)
        if parsed is not None:
            return parsed
        host, sep, port_text = addr.rpartition(":")
        if not sep or not host:
            # no port: grpc's DNS resolver and redis clients dial their default port
            host, port_text = addr, "443"
        try:
            port: int | None = int(port_text)
        except ValueError:
            port = None
        if len(self._addresses) >= 4096:  # service code may dial addresses of its own making
            self._addresses.clear()
        parsed = self._addresses[key] = (host, self._service_name(host), port)
        return parsed

    def is_down(self, pod: Pod) -> bool:
        """The server process in `pod` is stopped (a datastore outage of its deployment or of
        this one replica), though the pod may still be Ready: the chart has no probes."""
        return pod.deployment in self.down_datastores or pod.name in self.down_datastores

    def zone_of(self, pod: Pod) -> str:
        node = self.cluster.nodes.get(pod.node)
        return node.zone if node is not None else ""

    def edge(self, caller: Pod, callee: Pod) -> EdgeEffect:
        """The network between two pods (chaos faults may act on one zone's replica only)."""
        return self.edge_effect(caller.deployment, callee.deployment, self.zone_of(caller), self.zone_of(callee))

    def _crossing_ms(self, zone: str, pod: Pod) -> float:
        """Round trip between zones: the request and its answer each cross once."""
        if not zone or self.spec.zones.cross_zone_ms <= 0.0 or self.zone_of(pod) == zone:
            return 0.0
        return 2.0 * self.spec.zones.cross_zone_ms

    def _pick(self, deployment: str, zone: str = "") -> Pod | None:
        ready = [p for p in self.cluster.pods_by_name(deployment) if p.ready]
        if not ready:
            return None
        if zone and deployment in self._prefer_close:
            # trafficDistribution: PreferClose: the caller's zone while it has a ready endpoint
            nodes = self.cluster.nodes  # zone_of inlined: this filter runs on every call
            local = [p for p in ready if (node := nodes.get(p.node)) is not None and node.zone == zone]
            ready = local or ready
        turn = self._round_robin.get(deployment, 0)
        self._round_robin[deployment] = turn + 1
        return ready[turn % len(ready)]

    # --- HTTP between services -------------------------------------------------------------------
    def http_call(self, ctx: CallContext, method: str, url: str, body: Any, limit_ms: float,
                  is_deadline: bool = False) -> dict[str, Any]:
        """One HTTP request from `ctx`'s pod (no retries; the client library's words on failure)."""
        caller = ctx._pod
        client = self.spec.deployments[caller.deployment].language
        ctx._trace.calls += 1
        host, port, path, query = (_split_known_url if type(url) is str else _split_url)(url)
        span_id = ctx._trace.new_span_id()
        status, response_body, failure, ms = 0, None, "", NETWORK_MS
        peer, pod, dial = self.resolve(caller, f"{host}:{port}")
        if ctx._trace.calls > MAX_CALLS_PER_REQUEST or limit_ms <= 0.0 or ctx._depth >= MAX_CALL_DEPTH:
            failure, ms = ("timeout" if is_deadline else "canceled"), max(0.0, limit_ms)
        elif dial is not None:
            if dial.kind == "timeout":
                failure, ms = ("timeout", min(limit_ms, rpctexts.CONNECT_TIMEOUT_MS))
            else:
                failure = dial.kind
        else:
            effect = self.edge(caller, pod)
            ms += effect.delay_ms + self._crossing_ms(self.zone_of(caller), pod)
            if effect.partitioned:
                failure, ms = ("timeout" if is_deadline else "canceled"), limit_ms
            else:
                if effect.loss and self.rng.random() < effect.loss:
                    ms += 200.0 * (2 ** int(self.rng.random() * 3))
                request = {"method": method, "path": path, "query": dict(query),
                           "body": body, "headers": {"content-type": "application/json"} if body is not None else {},
                           "params": {}}
                status, response_body, served_ms, transport = self._serve_http(
                    pod, request, ctx._trace, span_id, limit_ms - ms, ctx._depth + 1, is_deadline, client)
                ms += served_ms
                failure = transport
                if ms >= limit_ms:
                    failure, ms = ("timeout" if is_deadline else "canceled"), limit_ms
        ctx._elapsed_ms += ms
        svc = self.spec.services.get(peer)
        ip = self.cluster_ip(svc.name) if svc is not None else ""
        attributes: dict[str, Any] = {"http.request.method": method}
        if not failure:
            attributes["http.response.status_code"] = str(status)
        self._span(
            ctx._trace,
            {
                "trace_id": ctx._trace.trace_id,
                "span_id": span_id,
                "parent_span_id": ctx._span_id,
                "service": caller.deployment,
                "pod": caller.name,
                "name": method,
                "kind": "SPAN_KIND_CLIENT",
                "start": ctx.now,
                "duration_ms": round(ms, 3),
                "status": "STATUS_CODE_ERROR" if failure or status >= 400 else "STATUS_CODE_UNSET",
                "status_message": httptexts.failure(client, failure, method, url, ip, port) if failure
                else (f"HTTP {status}" if status >= 400 else ""),
                "attributes": attributes,
                "peer": f"{host}:{port}",
            },
            self.spec.deployments[caller.deployment].traced,
        )
        if failure:
            raise HttpError(failure, httptexts.failure(client, failure, method, url, ip, port))
        return {"status": status, "body": response_body}

    # --- feature flags ---------------------------------------------------------------------------
    def flag(self, caller: Pod, name: str, default: Any = None) -> Any:
        """A flag as the caller's OpenFeature client evaluates it: through flagd when the app has
        one (the caller's FLAGD_HOST:FLAGD_PORT must reach a ready flagd, else the caller's default,
        as OpenFeature returns on any evaluation error), else the `feature-flags` ConfigMap."""
        source = self.spec.flags
        if source is None:
            return self.cluster.configmaps.get("feature-flags", {}).get(name, default)
        host, port = caller.env.get(source.host_env, ""), caller.env.get(source.port_env, "")
        _peer, pod, failure = self.resolve(caller, f"{host}:{port}")
        if failure is not None or pod is None or self.edge(caller, pod).partitioned:
            return default
        return self.flag_value(name, default)

    def flag_value(self, name: str, default: Any = None) -> Any:
        """The value flagd serves for `name` from its flag file: the default variant's, or
        `default` for a flag that is missing or not ENABLED."""
        flag = self.flag_file(self.spec.flags).get(name)
        if not isinstance(flag, dict) or flag.get("state", "ENABLED") != "ENABLED":
            return default
        variants = flag.get("variants", {})
        return variants.get(flag.get("defaultVariant"), default) if isinstance(variants, dict) else default

    def flag_file(self, source: Any) -> dict[str, Any]:
        """The flags of the app's flag file (parsed once per content)."""
        text = self.cluster.configmaps.get(source.configmap, {}).get(source.key, "")
        if self._flag_cache is None or self._flag_cache[0] != text:
            try:
                flags = json.loads(text).get("flags", {}) if text else {}
            except (ValueError, AttributeError):
                flags = {}  # flagd keeps serving its last good file; the twin serves none
            self._flag_cache = (text, flags if isinstance(flags, dict) else {})
        return self._flag_cache[1]

    def connect_datastore(self, caller: Pod, addr: str) -> tuple[RedisServer, float]:
        """A redis connection from `caller`. StackExchange.Redis (cartservice) reports a failed
        connect as `UnableToConnect on <endpoint>/Interactive`, followed by the socket error .NET
        gives on Linux."""
        peer, pod, failure = self.resolve(caller, addr)
        error = None
        if failure is not None:
            error = failure.kind
        elif self.is_down(pod) or pod.name not in self.servers:
            error = "refused"
        elif self.edge(caller, pod).partitioned:
            error = "timeout"
        if error is not None:
            raise RpcError("UNAVAILABLE", rpctexts.redis_unable_to_connect(addr, error))
        dep = self.spec.deployments[pod.deployment]
        op_ms = float(dep.datastore.get("op_ms", 0.3))
        pod.cpu_demand += op_ms / 1000.0 * self.weight
        return self.servers[pod.name], op_ms + NETWORK_MS + self.edge(caller, pod).delay_ms

    # --- Kafka and PostgreSQL (twin/dataclients.py) ------------------------------------------------
    def kafka_send(self, ctx: CallContext, addr: str, topic: str, value: Any, key: str | None,
                   headers: dict[str, str] | None) -> int:
        from pytest_marathon.twin import dataclients
        return dataclients.kafka_send(self, ctx, addr, topic, value, key, headers)

    def sql_run(self, ctx: CallContext, dsn: Any, sql: str, params: tuple[Any, ...]) -> tuple[list[dict[str, Any]], int]:
        from pytest_marathon.twin import dataclients
        return dataclients.sql_run(self, ctx, dsn, sql, params)

    def mysql_run(self, ctx: CallContext, url: Any, sql: str, params: tuple[Any, ...]) -> tuple[list[dict[str, Any]], int]:
        from pytest_marathon.twin import dataclients
        return dataclients.mysql_run(self, ctx, url, sql, params)

    def mongo_run(self, ctx: CallContext, uri: Any, db: str, command: dict[str, Any]) -> dict[str, Any]:
        from pytest_marathon.twin import dataclients
        return dataclients.mongo_run(self, ctx, uri, db, command)


def _path_of(request: Any) -> str:
    """The path of an HTTP request (Spring Boot's error body names it)."""
    return str(request.get("path", "")) if isinstance(request, dict) else ""


def _http_answer(code: str, message: str, response: Any) -> tuple[int, Any]:
    """(status, body) of an HTTP handler's result: a failed handler's status by its code, a
    `{"status": n, "body": b}` answer as given, anything else 200 with itself as the body."""
    if code != "OK":
        return HTTP_STATUS_OF.get(code, 500), message
    if isinstance(response, dict) and isinstance(response.get("status"), int):
        return int(response["status"]), response.get("body")
    return 200, response


def _aspnetcore_status_log(code: str, message: str) -> str:
    """ASP.NET Core's gRPC server logs every status a handler raises (category
    Grpc.AspNetCore.Server.ServerCallHandler, Information, outside the `Microsoft` filter), so a
    C# service's failures show in its own log even where its code logs nothing."""
    status = "".join(part.capitalize() for part in code.split("_"))
    return f"Error status code '{status}' with detail '{message}' raised."
