"""Consumer workloads (`kind: consumer`) and the data servers the engine starts without code.

Each 5 s tick, after the load's requests, every running consumer pod polls the broker its
`consumer.broker_env` address resolves to (the Service's ready endpoint, as any connection) and
its service code's `consume(ctx, record)` runs per pending record while the handler's
accumulated time (`ctx.work`, `ctx.sleep`, calls) fits in the tick; time beyond the tick is owed
by the next one, so a consumer slower than the producer falls behind and its lag grows.

What is modelled (docs/design/astronomy-facts.md §4.13, §4.14, §6):

* Auto-commit: the offset after each handled record is committed (accounting's
  `EnableAutoCommit=true`, upstream `src/accounting/Consumer.cs`; kafka-clients' default for
  fraud-detection). A record whose exception ends the process (`on_error: exit`) is not
  committed: the auto-commit would have happened at the next poll, which never comes, so the
  restarted consumer reads it again.
* Members of a group are the running consumer pods attached to that broker; with one partition
  per topic only the first member (name order, kafka-clients' range assignor) gets it, the
  others idle.
* An exception escaping `consume`: with `on_error: log` the consume loop's catch logs it in the
  language runtime's words and goes on (accounting, `Consumer.cs` logs `Order parsing failed:`
  from its own catch, which the service code writes); with `on_error: exit` it is unhandled and
  ends the process the way the runtime reports an unhandled exception (`langerrors.startup_failure`:
  .NET `Unhandled exception.`, JVM `Exception in thread "main"`, a Go panic), then the kubelet
  restarts it (CrashLoopBackOff). Kotlin runs on the JVM: its texts are Java's.
* Consumer spans `process <topic>` (SPAN_KIND_CONSUMER) join the producer's trace when the record
  carries a W3C `traceparent` header (the Java agent's and .NET auto-instrumentation's Kafka
  propagation); otherwise they start a trace of their own.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_marathon.twin import langerrors
from pytest_marathon.twin.cluster import ContainerCrash
from pytest_marathon.twin.kafka import Broker, Record
from pytest_marathon.twin.memcache import (
    EX_USAGE,
    MemcachedServer,
    MemcachedUsageError,
    parse_settings,
)
from pytest_marathon.twin.mysqlstore import MySqlServer
from pytest_marathon.twin.runtime import CallContext, ContainerExit, _Trace
from pytest_marathon.twin.sqlstore import PgServer, load_init_sql

if TYPE_CHECKING:
    from pytest_marathon.twin.appspec import DeploymentSpec
    from pytest_marathon.twin.engine import Twin
    from pytest_marathon.twin.objects import Pod

TICK_MS = 5_000.0
# A consumer has no deadline per record; kafka-clients' max.poll.interval.ms (300 s) bounds a poll
CONSUME_LIMIT_MS = 300_000.0
MAX_POLL_RECORDS = 500  # kafka-clients' and librdkafka's batch default for one poll


@dataclass
class ConsumerState:
    """Time each consumer pod's handler still owes from earlier ticks (ms)."""

    debt_ms: dict[str, float] = field(default_factory=dict)


def start_data_server(twin: Twin, pod: Pod, dep: DeploymentSpec) -> None:
    """A kafka or postgres container starts: a fresh broker or server (the chart gives neither a
    volume, so nothing survives a restart). flagd keeps no state here."""
    live = set(twin.cluster.pods)
    for table in (twin.brokers, twin.pg_servers):
        for name in [n for n in table if n not in live]:
            del table[name]
    if dep.kind == "kafka":
        twin.brokers[pod.name] = Broker()
    elif dep.kind == "postgres":
        # the postgres image's entrypoint creates POSTGRES_USER with POSTGRES_PASSWORD and the
        # database POSTGRES_DB (default: the user's name), then runs /docker-entrypoint-initdb.d
        user = pod.env.get("POSTGRES_USER", "postgres")
        twin.pg_servers[pod.name] = PgServer(user, pod.env.get("POSTGRES_PASSWORD", ""),
                                             pod.env.get("POSTGRES_DB", user),
                                             load_init_sql(twin.spec.path, dep.datastore.get("init")))


def start_mysql(twin: Twin, pod: Pod, dep: DeploymentSpec) -> None:
    """A mysqld container starts. With `datastore.volume: true` (Train Ticket's chart enables
    persistence: a PersistentVolumeClaim at the data directory) it starts on the deployment's
    data: rows, users, grants and a rotated password survive, only the status counters restart;
    without a volume the image's entrypoint initialises an empty data directory again (env users
    and database, then the init script). Replicas on one volume share one server (no
    replication is modelled)."""
    for name in [n for n in twin.mysql_servers if n not in twin.cluster.pods]:
        del twin.mysql_servers[name]
    kept = twin.mysql_volumes.get(dep.name) if dep.datastore.get("volume") else None
    if kept is not None:
        kept.restart()
        twin.mysql_servers[pod.name] = kept
        return
    env = pod.env
    server = MySqlServer(env.get("MYSQL_ROOT_PASSWORD", ""), env.get("MYSQL_DATABASE", ""), env.get("MYSQL_USER", ""),
                         env.get("MYSQL_PASSWORD", ""), load_init_sql(twin.spec.path, dep.datastore.get("init")))
    if dep.datastore.get("volume"):
        twin.mysql_volumes[dep.name] = server
    twin.mysql_servers[pod.name] = server


def start_memcached(twin: Twin, pod: Pod) -> None:
    """A memcached container starts: an empty cache (memcached keeps nothing across a restart)
    with `-m`/`-I` from its args; options memcached refuses print their line and exit EX_USAGE."""
    for name in [n for n in twin.memcached if n not in twin.cluster.pods]:
        del twin.memcached[name]
    try:
        settings = parse_settings(pod.args)
    except MemcachedUsageError as exc:
        twin.startup_context(pod).log("error", str(exc))
        raise ContainerCrash(str(exc), EX_USAGE) from None
    twin.memcached[pod.name] = MemcachedServer(settings)


def run_consumers(twin: Twin, t: float) -> None:
    """One tick of every consumer workload (called by the engine after the load's requests)."""
    rt = twin.runtime
    attached: dict[tuple[str, str, str, str], list[Pod]] = {}
    for name, dep in sorted(twin.spec.deployments.items()):
        if dep.kind != "consumer":
            continue
        conf = dep.consumer
        for pod in sorted(twin.cluster.pods_of(name), key=lambda p: p.name):
            if not pod.running or pod.instance is None:
                continue
            addr = str(pod.env.get(conf.get("broker_env", "KAFKA_ADDR"), ""))
            _peer, broker_pod, failure = rt.resolve(pod, addr)
            kind = failure.kind if failure is not None else ""
            if not kind and (broker_pod is None or broker_pod.name not in twin.brokers or rt.is_down(broker_pod)):
                kind = "refused"
            elif not kind and rt.edge(pod, broker_pod).partitioned:
                kind = "timeout"
            if kind:
                # the client keeps retrying its bootstrap and says so; nothing is consumed
                host = addr.rpartition(":")[0]
                ip = failure.ip if failure is not None and failure.ip else (
                    rt.cluster_ip(host) if host in twin.spec.services else "")
                _bootstrap_failure(twin, pod, dep, addr, kind, ip, t)
                continue
            key = (broker_pod.name, str(conf.get("group", name)), str(conf.get("topic", "orders")),
                   str(conf.get("offset_reset", "latest")))
            attached.setdefault(key, []).append(pod)
    seen: set[tuple[str, str]] = set()
    weight = rt.weight
    rt.weight = 1.0  # every record is handled, none sampled
    try:
        for (broker_name, group, topic, reset), pods in sorted(attached.items()):
            broker = twin.brokers[broker_name]
            broker.join(group, topic, reset)
            broker.set_members(group, {p.name for p in pods})
            seen.add((broker_name, group))
            for partition in range(broker.partitions(topic)):
                _drain(twin, pods[partition % len(pods)], broker, group, topic, partition, t)
    finally:
        rt.weight = weight
    for broker_name, broker in twin.brokers.items():
        for group in broker.groups:
            if (broker_name, group) not in seen:
                broker.set_members(group, set())


def _bootstrap_failure(twin: Twin, pod: Pod, dep: DeploymentSpec, addr: str, kind: str, ip: str, t: float) -> None:
    """What a consumer whose broker does not answer logs, once per tick (its client retries with
    back-off and suppresses identical lines in between):

    * .NET Confluent.Kafka (librdkafka, no error handler set, so it logs to stderr): `%3|...|FAIL|`
      lines, `Failed to resolve '<addr>': Name or service not known` or `Connect to ipv4#<ip>:<port>
      failed: Connection refused` (librdkafka src/rdkafka_broker.c rd_kafka_broker_fail).
    * Java/Kotlin kafka-clients: an unresolvable bootstrap address fails the KafkaConsumer
      constructor with `ConfigException: No resolvable bootstrap urls given in bootstrap.servers`
      (clients/ClientUtils.java parseAndValidateAddresses), which nothing in main catches, so the
      process exits; a refused connection is NetworkClient's WARN `Connection to node -1 (<addr>)
      could not be established. Node may not be available.`
    """
    group = str(dep.consumer.get("group", dep.name))
    host, _, port = addr.rpartition(":")
    ctx = twin.startup_context(pod)
    if dep.language in ("kotlin", "java"):
        if kind == "nxdomain":
            ctx.log("error", 'Exception in thread "main" org.apache.kafka.common.config.ConfigException: '
                             "No resolvable bootstrap urls given in bootstrap.servers")
            twin.runtime._exit(pod, "Error", 1, t, "No resolvable bootstrap urls given in bootstrap.servers")
            return
        ctx.log("warning", f"[Consumer clientId=consumer-{group}-1, groupId={group}] Connection to node -1 "
                           f"({host}/{ip or host}:{port}) could not be established. Node may not be available.")
        return
    if kind == "nxdomain":
        detail = f"Failed to resolve '{addr}': Name or service not known"
    elif kind == "timeout":
        detail = f"Connect to ipv4#{ip}:{port} failed: Connection timed out"
    else:
        detail = f"Connect to ipv4#{ip}:{port} failed: Connection refused"
    ctx.log("error", f"%3|FAIL|rdkafka#consumer-1| [thrd:{addr}/bootstrap]: {addr}/bootstrap: {detail} "
                     "(after 0ms in state CONNECT)")


def _drain(twin: Twin, pod: Pod, broker: Broker, group: str, topic: str, partition: int, t: float) -> None:
    state = twin.consumers
    owed = state.debt_ms.get(pod.name, 0.0)
    if owed >= TICK_MS:
        state.debt_ms[pod.name] = owed - TICK_MS
        return
    budget, used = TICK_MS - owed, 0.0
    while used < budget and pod.running and pod.instance is not None:
        records = broker.fetch(group, topic, partition, MAX_POLL_RECORDS)
        if not records:
            break
        for record in records:
            ms, commit = _consume_one(twin, pod, broker, record, t + (owed + used) / 1000.0)
            used += ms
            if not commit:
                state.debt_ms[pod.name] = 0.0
                return
            broker.commit(group, topic, partition, record.offset + 1)
            if used >= budget or not pod.running:
                break
    state.debt_ms[pod.name] = max(0.0, used - budget)


def _trace_for(twin: Twin, broker: Broker, record: Record, group: str, t: float) -> tuple[_Trace, str]:
    """The producer's trace (and span as parent) from `traceparent`, or a trace of its own."""
    parts = str(record.headers.get("traceparent", "")).split("-")
    if len(parts) == 4 and len(parts[1]) == 32:
        trace_id, parent = parts[1], parts[2]
    else:
        digest = hashlib.sha256(f"{twin.seed}/consume/{record.topic}/{record.offset}/{group}".encode()).hexdigest()
        trace_id, parent = digest[:32], ""
    trace = _Trace(trace_id, trace_id[:16], t)
    # span ids of this group's spans must not collide with the producer's in the same trace
    trace._next = 0x40000000 + (zlib.crc32(group.encode()) % 0x1000) * 0x10000
    return trace, parent


def _consume_one(twin: Twin, pod: Pod, broker: Broker, record: Record, t: float) -> tuple[float, bool]:
    """Run `consume(ctx, record)`; (ms it took, whether the offset is committed)."""
    rt = twin.runtime
    dep = twin.spec.deployments[pod.deployment]
    conf = dep.consumer
    group = str(conf.get("group", dep.name))
    trace, parent = _trace_for(twin, broker, record, group, t)
    span_id = trace.new_span_id()
    ctx = CallContext(rt, pod, trace, span_id, CONSUME_LIMIT_MS)
    language = "java" if dep.language == "kotlin" else dep.language
    error, commit = "", True
    try:
        pod.instance.handle("consume", ctx, record.as_dict())
    except ContainerExit as exit_:
        error, commit = "exited", False
        rt._exit(pod, "Error", exit_.code, t, "exited")
    except Exception as exc:  # noqa: BLE001 - service code may raise anything; its runtime reports it
        error = langerrors.exception_text(language, exc)
        if conf.get("on_error", "log") == "exit":
            exit_code, lines = langerrors.startup_failure(language, exc)
            for line in lines:
                ctx.log("error", line)
            commit = False
            rt._exit(pod, "Error", exit_code, t, lines[0].split("\n", 1)[0])
        else:
            ctx.log("error", error)
    method = dep.methods.get("consume")
    cpu_ms = (method.base_ms if method else 0.5) + ctx._work_ms
    pod.cpu_demand += cpu_ms / 1000.0
    total_ms = cpu_ms * rt._queue_factor(pod) + rt._throttled_wait_ms(pod) + ctx._elapsed_ms
    span: dict[str, Any] = {
        "trace_id": trace.trace_id, "span_id": span_id, "parent_span_id": parent, "service": dep.name,
        "pod": pod.name, "name": f"process {record.topic}", "kind": "SPAN_KIND_CONSUMER", "start": t,
        "duration_ms": round(total_ms, 3), "status": "STATUS_CODE_ERROR" if error else "STATUS_CODE_UNSET",
        "status_message": error,
        "attributes": {"messaging.system": "kafka", "messaging.destination.name": record.topic,
                       "messaging.consumer.group.name": group, "messaging.kafka.offset": record.offset,
                       "messaging.operation.type": "process"},
    }
    rt._span(trace, span, dep.traced)
    if trace.spans and rt.sink is twin.telemetry:
        twin.telemetry.extend_trace(trace.trace_id, t, f"process {record.topic}", trace.spans)
    return total_ms, commit
