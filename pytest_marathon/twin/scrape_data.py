"""Kafka and PostgreSQL series, read off the twin's brokers and servers at each scrape.

* Kafka: the collector's `kafkametrics` receiver (opentelemetry-collector-contrib
  `receiver/kafkametricsreceiver`, scrapers `brokers` and `consumers`; the demo chart configures it
  with `brokers: kafka:9092`, facts §6): `kafka.brokers`, `kafka.consumer_group.lag{group, topic,
  partition}`, `kafka.consumer_group.lag_sum{group, topic}`, `kafka.consumer_group.members{group}`,
  exported under the names the contract fixes (`kafka_brokers`, `kafka_consumer_group_lag`, ...).
  The receiver bootstraps through the Service, so it sees one broker: the pod the Service would
  pick for a caller in the first node's zone. A broker it cannot reach yields no series (the
  scrape fails), so they go stale.
* memcached: prometheus/memcached_exporter (`pkg/exporter/exporter.go` Collect/parseStats), run
  in multi-target mode like the redis exporter (`instance` the target `host:port`, the pod the
  Service picks): `memcached_up` (0 when `stats` fails, then nothing else), `memcached_current_items`
  (curr_items), `memcached_current_bytes` (bytes), `memcached_limit_bytes` (limit_maxbytes),
  `memcached_current_connections` (curr_connections), `memcached_items_evicted_total`
  (evictions), `memcached_items_reclaimed_total` (reclaimed), `memcached_item_too_large_total`
  (store_too_large) and `memcached_commands_total{command, status}`: get/delete/incr/decr/cas/touch
  hit and miss from `<op>_hits`/`<op>_misses`, cas badval, flush hit, and set hit as cmd_set
  less the CAS commands.
* PostgreSQL: prometheus-community postgres_exporter (`collector/pg_database.go`,
  `collector/pg_stat_database.go`): `pg_up` (0 when the connection fails, then nothing else),
  `pg_stat_database_numbackends{datname}` (client connections) and
  `pg_stat_database_xact_rollback{datname}` (a counter), run in multi-target mode like the
  redis exporter (`instance` is the target `host:port`).
* MongoDB: percona/mongodb_exporter (`exporter/exporter.go` for `mongodb_up`; serverStatus
  under the `mongodb_ss_` prefix with the label names of `exporter/metrics.go`
  specialConversions): `mongodb_ss_connections{conn_type="current"}`,
  `mongodb_ss_opcounters{legacy_op_type}` (insert, query, update, delete, getmore, command) and
  `mongodb_ss_asserts{assert_type}` (regular, warning, msg, user, rollovers), counters since the
  mongod started. A server the exporter cannot reach gives `mongodb_up` 0 and nothing else.
* MySQL: prometheus/mysqld_exporter (`mysqld_exporter.go`: `mysql_up` 0 when the exporter's
  connection fails, then nothing else; `collector/global_status.go`: SHOW GLOBAL STATUS
  variables lower-cased under `mysql_global_status_`, `Com_<command>` as
  `mysql_global_status_commands_total{command}`): `threads_connected` (client pods holding a
  connection), `aborted_connects` (failed logins) and the select/insert/update/delete commands,
  counters since mysqld started.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_marathon.twin.engine import Twin
    from pytest_marathon.twin.objects import Pod

PG_JOB = "postgres_exporter"
MEMCACHED_JOB = "memcached_exporter"
MEMCACHED_SERIES = ("memcached_current_items", "memcached_current_bytes", "memcached_limit_bytes",
                    "memcached_current_connections", "memcached_items_evicted_total",
                    "memcached_items_reclaimed_total", "memcached_item_too_large_total")
MONGO_JOB = "mongodb_exporter"
MYSQL_JOB = "mysqld_exporter"
MONGO_SERIES = ("mongodb_ss_connections", "mongodb_ss_opcounters", "mongodb_ss_asserts")


def _serving_pod(twin: Twin, deployment: str, table: dict[str, Any]) -> Pod | None:
    """The pod whose server the exporter reaches: running, up, preferring the first zone."""
    zone_of = {n.name: n.zone for n in twin.spec.nodes}
    home = twin.spec.nodes[0].zone
    pods = [p for p in twin.cluster.pods_of(deployment)
            if p.running and p.name in table and twin.cluster.nodes[p.node].ready]
    if not pods or deployment in twin.down_datastores:
        return None
    chosen = sorted(pods, key=lambda p: (zone_of.get(p.node) != home, p.name))[0]
    return None if chosen.name in twin.down_datastores else chosen


def scrape_data_servers(twin: Twin, t: float) -> None:
    tel = twin.telemetry
    for name, dep in sorted(twin.spec.deployments.items()):
        if dep.kind == "kafka":
            pod = _serving_pod(twin, name, twin.brokers)
            if pod is None:
                for metric in ("kafka_brokers",):
                    tel.absent(t, metric, ())
                for metric in ("kafka_consumer_group_lag", "kafka_consumer_group_lag_sum",
                               "kafka_consumer_group_members"):
                    tel.gauge_set(t, metric, name, [])
                continue
            broker = twin.brokers[pod.name]
            tel.gauge(t, "kafka_brokers", (), 1.0)
            table = broker.lag_table()
            tel.gauge_set(t, "kafka_consumer_group_lag", name, [
                ((("group", g), ("topic", topic), ("partition", str(part))), float(lag))
                for g, topic, part, lag in table])
            sums: dict[tuple[str, str], float] = {}
            for g, topic, _part, lag in table:
                sums[(g, topic)] = sums.get((g, topic), 0.0) + lag
            tel.gauge_set(t, "kafka_consumer_group_lag_sum", name, [
                ((("group", g), ("topic", topic)), value) for (g, topic), value in sorted(sums.items())])
            tel.gauge_set(t, "kafka_consumer_group_members", name, [
                ((("group", g.name),), float(len(g.members))) for g in sorted(broker.groups.values(), key=lambda g: g.name)])
        elif dep.kind == "memcached":
            _scrape_memcached(twin, t, name)
        elif dep.kind == "mongodb":
            scrape_mongo(twin, t, name)
        elif dep.kind == "mysql":
            scrape_mysql(twin, t, name)
        elif dep.kind == "postgres":
            ids = _exporter_ids(twin, name, PG_JOB, 5432)
            pod = _serving_pod(twin, name, twin.pg_servers)
            tel.gauge(t, "pg_up", ids, 0.0 if pod is None else 1.0)
            if pod is None:
                for metric in ("pg_stat_database_numbackends", "pg_stat_database_xact_rollback"):
                    tel.gauge_set(t, metric, name, [])
                continue
            server = twin.pg_servers[pod.name]
            backends = _running(twin, server.backends)
            db = (*ids, ("datname", server.database))
            tel.gauge_set(t, "pg_stat_database_numbackends", name, [(db, float(backends))])
            tel.gauge_set(t, "pg_stat_database_xact_rollback", name, [(db, float(server.xact_rollback))])


def _scrape_memcached(twin: Twin, t: float, name: str) -> None:
    tel = twin.telemetry
    ids = _exporter_ids(twin, name, MEMCACHED_JOB, 11211)
    pod = _serving_pod(twin, name, twin.memcached)
    tel.gauge(t, "memcached_up", ids, 0.0 if pod is None else 1.0)
    if pod is None:
        for metric in MEMCACHED_SERIES:
            tel.absent(t, metric, ids)
        tel.gauge_set(t, "memcached_commands_total", name, [])
        return
    server = twin.memcached[pod.name]
    s = server.stats
    clients = _running(twin, server.clients)
    for metric, value in zip(MEMCACHED_SERIES, (server.curr_items, server.bytes, server.settings.maxbytes, clients,
                                                s["evictions"], s["reclaimed"], s["store_too_large"]), strict=True):
        tel.gauge(t, metric, ids, float(value))
    commands = [(op, status, s.get(f"{op}_{'hits' if status == 'hit' else 'misses'}", 0))
                for op in ("get", "delete", "incr", "decr", "cas", "touch") for status in ("hit", "miss")]
    commands += [("cas", "badval", 0), ("flush", "hit", 0), ("set", "hit", s["cmd_set"])]
    tel.gauge_set(t, "memcached_commands_total", name, [
        ((*ids, ("command", op), ("status", status)), float(value)) for op, status, value in commands])


def scrape_mongo(twin: Twin, t: float, name: str) -> None:
    tel = twin.telemetry
    ids = _exporter_ids(twin, name, MONGO_JOB, 27017)
    pod = _serving_pod(twin, name, twin.mongo_servers)
    tel.gauge(t, "mongodb_up", ids, 0.0 if pod is None else 1.0)
    if pod is None:
        for metric in MONGO_SERIES:
            tel.gauge_set(t, metric, name, [])
        return
    server = twin.mongo_servers[pod.name]
    clients = _running(twin, server.clients)
    tel.gauge_set(t, "mongodb_ss_connections", name, [((*ids, ("conn_type", "current")), float(clients))])
    tel.gauge_set(t, "mongodb_ss_opcounters", name, [
        ((*ids, ("legacy_op_type", op)), float(n)) for op, n in server.opcounters.items()])
    tel.gauge_set(t, "mongodb_ss_asserts", name, [
        ((*ids, ("assert_type", kind)), float(n)) for kind, n in server.asserts.items()])


def scrape_mysql(twin: Twin, t: float, name: str) -> None:
    tel = twin.telemetry
    ids = _exporter_ids(twin, name, MYSQL_JOB, 3306)
    pod = _serving_pod(twin, name, twin.mysql_servers)
    tel.gauge(t, "mysql_up", ids, 0.0 if pod is None else 1.0)
    if pod is None:
        for metric in ("mysql_global_status_threads_connected", "mysql_global_status_aborted_connects"):
            tel.absent(t, metric, ids)
        tel.gauge_set(t, "mysql_global_status_commands_total", name, [])
        return
    server = twin.mysql_servers[pod.name]
    clients = _running(twin, server.threads_connected)
    tel.gauge(t, "mysql_global_status_threads_connected", ids, float(clients))
    tel.gauge(t, "mysql_global_status_aborted_connects", ids, float(server.aborted_connects))
    tel.gauge_set(t, "mysql_global_status_commands_total", name, [
        ((*ids, ("command", command)), float(count)) for command, count in sorted(server.commands.items())])


def _exporter_ids(twin: Twin, name: str, job: str, default_port: int) -> tuple[tuple[str, str], ...]:
    """An exporter's `job` and `instance` labels: the instance is the scrape target, the
    datastore's Service address (the first Service selecting it, by name), as the exporters'
    scrape configs dial it."""
    service = next((s for s in sorted(twin.spec.services.values(), key=lambda s: s.name) if s.selector == name), None)
    return (("job", job), ("instance", f"{service.name}:{service.port}" if service else f"{name}:{default_port}"))


def _running(twin: Twin, clients: Iterable[str]) -> int:
    """How many of a server's client connections belong to pods still running (a dead pod's
    connections are gone from the server's count)."""
    pods = twin.cluster.pods
    return sum(1 for p in clients if p in pods and pods[p].running)
