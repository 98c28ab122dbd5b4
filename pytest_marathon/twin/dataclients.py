"""The Kafka producer, PostgreSQL and MongoDB client sides of the runtime (`ctx.kafka`, `ctx.sql`,
`ctx.mongo`).

Addresses resolve as every connection does (`Runtime.resolve`: Service, ready endpoint, refused /
nxdomain / timeout), then the pod's own broker or server must be up (a `datastore_outage` takes
it down) and the edge not partitioned; network delays from chaos add to each operation. Producer
spans (`publish <topic>`, PRODUCER) and DB client spans (`SELECT catalog.products`, CLIENT,
`db.system.name=postgresql`) go through `Runtime._span` like every other span.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from pytest_marathon.twin.errors import MongoError, RpcError, SqlError
from pytest_marathon.twin.mongoclient import (
    SERVER_SELECTION_TIMEOUT_MS,
    MongoUri,
    auth_failure,
    plaintext_refused,
    selection_failure,
    server_failure,
)
from pytest_marathon.twin.mongostore import Uuid
from pytest_marathon.twin.mysqlclient import HIKARI_CONNECTION_TIMEOUT_MS, JdbcUrl
from pytest_marathon.twin.mysqlclient import connect_failure as mysql_connect_failure
from pytest_marathon.twin.mysqlclient import statement_failure as mysql_statement_failure
from pytest_marathon.twin.runtime import NETWORK_MS, DialFailure
from pytest_marathon.twin.sqlstore import Dsn, PgServer, connect_failure

if TYPE_CHECKING:
    from pytest_marathon.twin.objects import Pod
    from pytest_marathon.twin.runtime import CallContext, Runtime

# sarama's Net.DialTimeout default (IBM/sarama config.go: 30 s); lib/pq without connect_timeout waits
# for the kernel's SYN retries (~127 s on Linux); Npgsql's `Timeout` default is 15 s.
KAFKA_DIAL_TIMEOUT_MS = 30_000.0
PG_CONNECT_TIMEOUT_MS = {"csharp": 15_000.0}
PG_KERNEL_TIMEOUT_MS = 127_000.0


def _sarama_out_of_brokers(detail: str) -> str:
    """sarama's ErrOutOfBrokers (IBM/sarama `errors.go`: `kafka: client has run out of available
    brokers to talk to`) wrapping the last dial error, as the contract words it (the wrapped
    suffix is not verified against sarama 1.46.3 `client.go`)."""
    return f"kafka: client has run out of available brokers to talk to: {detail}"


def _connect_data_server(rt: Runtime, caller: Pod, addr: str, table: dict[str, Any]) -> tuple[Any, Any, DialFailure | None]:
    """(server, pod, failure) for a connection from `caller` to a Kafka or PostgreSQL address."""
    peer, pod, failure = rt.resolve(caller, addr)
    if failure is not None:
        return None, None, failure
    host, _, port_text = addr.rpartition(":")
    service = host.split(".", 1)[0]
    ip = rt.cluster_ip(service) if service in rt.spec.services else ""
    port = int(port_text) if port_text.isdigit() else 0
    if rt.is_down(pod) or pod.name not in table:
        return None, pod, DialFailure("refused", ip=ip, port=port, host=host, addr=addr)
    if rt.edge(caller, pod).partitioned:
        return None, pod, DialFailure("timeout", ip=ip, port=port, host=host, addr=addr)
    return table[pod.name], pod, None


def _failure_detail(failure: DialFailure, addr: str) -> str:
    host = failure.host or addr.rpartition(":")[0]
    if failure.kind == "nxdomain":
        return f"dial tcp: lookup {host} on 10.96.0.10:53: no such host"
    if failure.kind == "timeout":
        return f"dial tcp {failure.ip}:{failure.port}: i/o timeout"
    return f"dial tcp {failure.ip}:{failure.port}: connect: connection refused"


def kafka_send(self: Runtime, ctx: CallContext, addr: str, topic: str, value: Any, key: str | None,
                headers: dict[str, str] | None) -> int:
    """One produce from `ctx`'s pod: a `publish <topic>` PRODUCER span, the record with the trace
    context in its headers (checkout injects it, upstream `src/checkout/main.go` sendToPostProcessor)."""
    caller = ctx._pod
    broker, pod, failure = _connect_data_server(self, caller, addr, self.brokers)
    span_id = ctx._trace.new_span_id()
    ms, error, offset = NETWORK_MS, "", -1
    if failure is not None:
        if failure.kind == "timeout":
            ms = min(KAFKA_DIAL_TIMEOUT_MS, max(0.0, ctx._deadline_ms - ctx._elapsed_ms))
        error = _sarama_out_of_brokers(_failure_detail(failure, addr))
    else:
        dep = self.spec.deployments[pod.deployment]
        op_ms = float(dep.datastore.get("op_ms", 0.4))
        pod.cpu_demand += op_ms / 1000.0 * self.weight
        ms += op_ms + self.edge(caller, pod).delay_ms
        record_headers = dict(headers or {})
        record_headers.setdefault("traceparent", f"00-{ctx._trace.trace_id}-{span_id}-01")
        plain = json.loads(json.dumps(value, default=str))
        _partition, offset = broker.produce(topic, plain, key, record_headers, ctx.now)
    ctx._elapsed_ms += ms
    self._span(ctx._trace, {
        "trace_id": ctx._trace.trace_id, "span_id": span_id, "parent_span_id": ctx._span_id,
        "service": caller.deployment, "pod": caller.name, "name": f"publish {topic}",
        "kind": "SPAN_KIND_PRODUCER", "start": ctx.now, "duration_ms": round(ms, 3),
        "status": "STATUS_CODE_ERROR" if error else "STATUS_CODE_UNSET", "status_message": error,
        "attributes": {"messaging.system": "kafka", "messaging.destination.name": topic,
                       "messaging.operation.type": "publish"},
        "peer": addr,
    }, self.spec.deployments[caller.deployment].traced)
    if error:
        raise RpcError("UNAVAILABLE", error, from_call=True)
    return offset


def sql_connect(self: Runtime, ctx: CallContext, dsn: Dsn) -> PgServer:
    caller = ctx._pod
    language = self.spec.deployments[caller.deployment].language
    server, pod, failure = _connect_data_server(self, caller, dsn.addr, self.pg_servers)
    if failure is not None:
        if failure.kind == "timeout":
            wait = PG_CONNECT_TIMEOUT_MS.get(language, PG_KERNEL_TIMEOUT_MS)
            ctx._elapsed_ms += min(wait, max(0.0, ctx._deadline_ms - ctx._elapsed_ms))
        else:
            ctx._elapsed_ms += NETWORK_MS
        raise SqlError("08006", connect_failure(language, failure.kind, failure.ip, failure.port, dsn.host),
                       failure.kind)
    ctx._elapsed_ms += NETWORK_MS + self.edge(caller, pod).delay_ms
    if not dsn.password and language == "csharp":
        # Npgsql checks before it answers the server's SCRAM challenge (Npgsql
        # `Internal/NpgsqlConnector.Auth.cs` AuthenticateSASL; not verified for Npgsql 9)
        raise SqlError("08P01", "No password has been provided but the backend requires one (in SASL/SCRAM-SHA-256)",
                       "auth")
    server.authenticate(dsn.user, dsn.password, dsn.database)
    server.backends.add(caller.name)
    return server


def sql_run(self: Runtime, ctx: CallContext, dsn: Dsn, sql: str, params: tuple[Any, ...]) -> tuple[list[dict[str, Any]], int]:
    """One statement: a DB CLIENT span named `<OPERATION> <table>` (semconv db spans: `SELECT
    catalog.products`), `db.system.name=postgresql`."""
    caller = ctx._pod
    span_id = ctx._trace.new_span_id()
    start_ms = ctx._elapsed_ms
    error: SqlError | None = None
    result: tuple[list[dict[str, Any]], int] = ([], 0)
    try:
        server = sql_connect(self, ctx, dsn)
        pod_name = next(name for name, s in self.pg_servers.items() if s is server)
        pod = self.cluster.pods.get(pod_name)
        op_ms = float(self.spec.deployments[pod.deployment].datastore.get("op_ms", 0.4)) if pod else 0.4
        if pod is not None:
            pod.cpu_demand += op_ms / 1000.0 * self.weight
        ctx._elapsed_ms += op_ms
        result = server.run(dsn.user, sql, tuple(params))
    except SqlError as exc:
        error = exc
    ms = ctx._elapsed_ms - start_ms
    attributes = {"db.system.name": "postgresql", "db.namespace": dsn.database, "server.address": dsn.host}
    if error is not None:
        attributes["db.response.status_code"] = error.sqlstate
    self._span(ctx._trace, {
        "trace_id": ctx._trace.trace_id, "span_id": span_id, "parent_span_id": ctx._span_id,
        "service": caller.deployment, "pod": caller.name, "name": _db_span_name(sql),
        "kind": "SPAN_KIND_CLIENT", "start": ctx.now, "duration_ms": round(ms, 3),
        "status": "STATUS_CODE_ERROR" if error else "STATUS_CODE_UNSET",
        "status_message": error.message if error else "", "attributes": attributes, "peer": dsn.addr,
    }, self.spec.deployments[caller.deployment].traced)
    if error is not None:
        raise error
    return result


def _db_span_name(sql: str) -> str:
    """`{db.operation.name} {db.collection.name}` (semconv `docs/database/database-spans.md`)."""
    words = sql.strip().split()
    operation = words[0].upper() if words else "SQL"
    found = re.search(r"\b(?:FROM|INTO|UPDATE|TABLE)\s+([\w.\"]+)", sql, re.I)
    table = found.group(1).replace('"', "") if found else ""
    if operation == "UPDATE" and len(words) > 1:
        table = words[1].replace('"', "")
    return f"{operation} {table}".strip()



def mongo_run(self: Runtime, ctx: CallContext, uri: MongoUri, db: str, command: dict[str, Any]) -> dict[str, Any]:
    """One MongoDB command from `ctx`'s pod: server selection (resolve, the pod's mongod up, no
    partition), SCRAM authentication when the URI has credentials, then the command. A DB CLIENT
    span `<command> <collection>`, `db.system.name=mongodb`."""
    caller = ctx._pod
    language = self.spec.deployments[caller.deployment].language
    span_id = ctx._trace.new_span_id()
    start_ms = ctx._elapsed_ms
    name = next(iter(command))
    error: MongoError | None = None
    result: dict[str, Any] = {}
    server, pod, failure = _connect_data_server(self, caller, uri.addr, self.mongo_servers)
    plaintext = failure is None and server.tls_mode == "requireTLS" and not uri.tls
    if failure is not None or plaintext:
        # the driver keeps selecting until serverSelectionTimeoutMS, or the caller's context ends
        remaining = max(0.0, ctx._deadline_ms - ctx._elapsed_ms)
        ended = ""
        if remaining < SERVER_SELECTION_TIMEOUT_MS:
            ended = "context deadline exceeded" if ctx._deadline_set else "context canceled"
        ctx._elapsed_ms += min(SERVER_SELECTION_TIMEOUT_MS, remaining)
        if plaintext:
            server.tls_refusals += 1
            error = plaintext_refused(language, uri, server.tls_refusals, ended)
        else:
            error = selection_failure(language, failure.kind, uri, failure.ip, ended)
    else:
        op_ms = float(self.spec.deployments[pod.deployment].datastore.get("op_ms", 0.4))
        pod.cpu_demand += op_ms / 1000.0 * self.weight
        ctx._elapsed_ms += NETWORK_MS + op_ms + self.edge(caller, pod).delay_ms
        try:
            principal = None
            if uri.user:
                mechanism = server.mechanism(uri.user, uri.auth_source)
                try:
                    principal = server.authenticate(uri.user, uri.password, uri.auth_source)
                except MongoError:
                    raise auth_failure(language, uri, mechanism) from None
            server.clients.add(caller.name)
            # the drivers send an implicit session with every command (its id is per client pod)
            sent = {**command, "lsid": {"id": Uuid.of(f"lsid/{caller.name}")}}
            try:
                result = server.run(principal, db, sent)
            except MongoError as exc:
                raise server_failure(language, exc, uri, name in ("insert", "update", "delete")) from None
        except MongoError as exc:
            error = exc
    ms = ctx._elapsed_ms - start_ms
    attributes = {"db.system.name": "mongodb", "db.namespace": db, "db.collection.name": str(command[name]),
                  "db.operation.name": name, "server.address": uri.host}
    if error is not None and error.code_name:
        attributes["db.response.status_code"] = str(error.code)
    self._span(ctx._trace, {
        "trace_id": ctx._trace.trace_id, "span_id": span_id, "parent_span_id": ctx._span_id,
        "service": caller.deployment, "pod": caller.name, "name": f"{name} {command[name]}",
        "kind": "SPAN_KIND_CLIENT", "start": ctx.now, "duration_ms": round(ms, 3),
        "status": "STATUS_CODE_ERROR" if error else "STATUS_CODE_UNSET",
        "status_message": error.message if error else "", "attributes": attributes, "peer": uri.addr,
    }, self.spec.deployments[caller.deployment].traced)
    if error is not None:
        raise error
    return result


def mysql_run(self: Runtime, ctx: CallContext, url: JdbcUrl, sql: str, params: tuple[Any, ...]) -> tuple[list[dict[str, Any]], int]:
    """One statement through a JDBC URL: every statement gets its connection anew (no pool kept,
    see docs/fidelity.md), so a refused dial, a partition or a refused login waits HikariCP's
    connectionTimeout and fails in the Java stack's words. A DB CLIENT span, `db.system.name=mysql`."""
    caller = ctx._pod
    language = self.spec.deployments[caller.deployment].language
    span_id = ctx._trace.new_span_id()
    start_ms = ctx._elapsed_ms
    error: SqlError | None = None
    result: tuple[list[dict[str, Any]], int] = ([], 0)
    server, pod, failure = _connect_data_server(self, caller, url.addr, self.mysql_servers)
    refusal: SqlError | None = None
    if failure is None:
        ctx._elapsed_ms += NETWORK_MS + self.edge(caller, pod).delay_ms
        try:
            server.authenticate(url.user, url.password, url.database, caller.ip or "%")
        except SqlError as exc:
            refusal = exc
    if failure is not None or refusal is not None:
        waited = min(HIKARI_CONNECTION_TIMEOUT_MS, max(0.0, ctx._deadline_ms - ctx._elapsed_ms))
        if language not in ("java", "kotlin"):
            waited = 0.0 if failure is None or failure.kind != "timeout" else waited
        ctx._elapsed_ms += waited
        error = mysql_connect_failure(language, failure.kind if failure else "", failure.ip if failure else "",
                                      failure.port if failure else 0, url.host, waited, refusal)
    else:
        server.threads_connected.add(caller.name)
        op_ms = float(self.spec.deployments[pod.deployment].datastore.get("op_ms", 0.4))
        pod.cpu_demand += op_ms / 1000.0 * self.weight
        ctx._elapsed_ms += op_ms
        try:
            result = server.run_as(url.user, caller.ip or "%", url.database, sql, tuple(params))
        except SqlError as exc:
            error = mysql_statement_failure(language, exc, sql)
    ms = ctx._elapsed_ms - start_ms
    attributes = {"db.system.name": "mysql", "db.namespace": url.database, "server.address": url.host}
    if error is not None and error.code:
        attributes["db.response.status_code"] = str(error.code)
    self._span(ctx._trace, {
        "trace_id": ctx._trace.trace_id, "span_id": span_id, "parent_span_id": ctx._span_id,
        "service": caller.deployment, "pod": caller.name, "name": _db_span_name(sql),
        "kind": "SPAN_KIND_CLIENT", "start": ctx.now, "duration_ms": round(ms, 3),
        "status": "STATUS_CODE_ERROR" if error else "STATUS_CODE_UNSET",
        "status_message": error.message.split("\n", 1)[0] if error else "", "attributes": attributes,
        "peer": url.addr,
    }, self.spec.deployments[caller.deployment].traced)
    if error is not None:
        raise error
    return result
