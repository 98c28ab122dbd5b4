"""The series a real cluster's exporters and the shipped collector configuration produce.

One entry per metric name: the labels it carries (besides `__name__`), and its source. The twin
emits exactly these (tests/test_telemetry_inventory.py checks both the twin and the rule pack
against this table), so a rule that reads a name or label outside it would never fire on a real
cluster. Sources, each cited where the twin emits the series:

- collector: `deploy/otel-collector.yaml`, span_metrics connector -> prometheus exporter
  (`twin/spanmetrics.py`);
- cadvisor: the kubelet's `/metrics/cadvisor`, scraped with the pod's `namespace`, `pod` and
  `container` (google/cadvisor `metrics/prometheus.go`);
- kube-state-metrics: kubernetes/kube-state-metrics `internal/store/{pod,deployment,node}.go`;
- redis_exporter: oliver006/redis_exporter `exporter/exporter.go`, `exporter/info.go`, scraped
  in multi-target mode (`instance` is the target URL, `job` the scrape job) from the monitoring
  namespace's view of the application namespace (`namespace`);
- kafkametrics: the collector's `kafkametrics` receiver (opentelemetry-collector-contrib
  `receiver/kafkametricsreceiver/metadata.yaml`, scrapers brokers and consumers), which the
  Astronomy Shop chart enables against `kafka:9092` (opentelemetry-helm-charts
  `charts/opentelemetry-demo/values.yaml`, `kafkametrics`); the receiver's resource carries no
  service, so the series have no `job` or `namespace`;
- memcached_exporter: prometheus/memcached_exporter `pkg/exporter/exporter.go`, scraped like
  redis_exporter (`instance` the target `host:port`, `job` the scrape job, `namespace` the
  application's);
- postgres_exporter: prometheus-community/postgres_exporter (`cmd/postgres_exporter/main.go` for
  `pg_up`, `collector/pg_stat_database.go` for `pg_stat_database_*`), scraped like redis_exporter
  (`instance` the target, `job` the scrape job, `namespace` the application's);
- mongodb_exporter: percona/mongodb_exporter (`exporter/exporter.go` for `mongodb_up`,
  `exporter/metrics.go` for the `mongodb_ss_*` serverStatus series and their `conn_type`,
  `legacy_op_type`, `assert_type` labels), scraped like postgres_exporter;
- mysqld_exporter: prometheus/mysqld_exporter (`mysqld_exporter.go` for `mysql_up`,
  `collector/global_status.go` for `mysql_global_status_*` and `commands_total{command}`),
  scraped like postgres_exporter.

Pinned releases (the manifests deploy exactly these, `deploy/monitoring.py`): kube-state-metrics
v2.17.0, the first release whose `internal/store/deployment.go` labels
`kube_deployment_status_condition` with `reason` (`allowedDeploymentReasons`); redis_exporter
v1.88.0, whose `exporter/exporter.go` and `exporter/info.go` produce every redis series below; the
collector image the header of `otel-collector.yaml` names.

The twin emits a subset of each exporter's labels (kube_pod_info has no `uid` or `pod_ip`,
cAdvisor series no `id` or `image`); every label listed here exists on the real series.
"""

from __future__ import annotations

from collections.abc import Mapping

#: The exporter images the series above are checked against, by source.
IMAGES: Mapping[str, str] = {
    "collector": "otel/opentelemetry-collector-contrib:0.155.0",
    "kube-state-metrics": "registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.17.0",
    "redis_exporter": "oliver006/redis_exporter:v1.88.0",
    # all-in-one with in-memory storage (cmd/jaeger/internal/all-in-one.yaml): OTLP on 4317,
    # the query service and its API v3 on 16686
    "jaeger": "jaegertracing/jaeger:2.20.0",
}

_SPAN = frozenset({"job", "service_name", "span_name", "span_kind", "status_code", "rpc_grpc_status_code",
                   "server_address", "http_request_method", "http_response_status_code"})
_CONTAINER = frozenset({"namespace", "pod", "container"})
_REDIS = frozenset({"namespace", "job", "instance"})
_PG = frozenset({"namespace", "job", "instance"})
_MEMCACHED = frozenset({"namespace", "job", "instance"})
_MONGO = frozenset({"namespace", "job", "instance"})
_MYSQL = frozenset({"namespace", "job", "instance"})

SERIES: Mapping[str, tuple[str, frozenset[str]]] = {
    "traces_span_metrics_calls_total": ("collector", _SPAN),
    "traces_span_metrics_duration_milliseconds_bucket": ("collector", _SPAN | {"le"}),
    "traces_span_metrics_duration_milliseconds_sum": ("collector", _SPAN),
    "traces_span_metrics_duration_milliseconds_count": ("collector", _SPAN),
    "container_cpu_usage_seconds_total": ("cadvisor", _CONTAINER),
    "container_cpu_cfs_periods_total": ("cadvisor", _CONTAINER),
    "container_cpu_cfs_throttled_periods_total": ("cadvisor", _CONTAINER),
    "container_memory_working_set_bytes": ("cadvisor", _CONTAINER),
    "container_spec_memory_limit_bytes": ("cadvisor", _CONTAINER),
    "kube_pod_container_status_restarts_total": ("kube-state-metrics", _CONTAINER),
    "kube_pod_container_status_waiting_reason": ("kube-state-metrics", _CONTAINER | {"reason"}),
    "kube_pod_container_status_last_terminated_reason": ("kube-state-metrics", _CONTAINER | {"reason"}),
    "kube_pod_container_resource_limits": ("kube-state-metrics", _CONTAINER | {"resource", "unit"}),
    "kube_pod_status_ready": ("kube-state-metrics", frozenset({"namespace", "pod", "condition"})),
    "kube_pod_info": ("kube-state-metrics", frozenset({"namespace", "pod", "node", "created_by_name"})),
    "kube_deployment_spec_replicas": ("kube-state-metrics", frozenset({"namespace", "deployment"})),
    "kube_deployment_status_replicas": ("kube-state-metrics", frozenset({"namespace", "deployment"})),
    "kube_deployment_status_replicas_available": ("kube-state-metrics", frozenset({"namespace", "deployment"})),
    "kube_deployment_status_replicas_unavailable": ("kube-state-metrics", frozenset({"namespace", "deployment"})),
    "kube_deployment_status_replicas_updated": ("kube-state-metrics", frozenset({"namespace", "deployment"})),
    "kube_deployment_metadata_generation": ("kube-state-metrics", frozenset({"namespace", "deployment"})),
    "kube_deployment_status_observed_generation": ("kube-state-metrics", frozenset({"namespace", "deployment"})),
    "kube_deployment_status_condition": ("kube-state-metrics",
                                         frozenset({"namespace", "deployment", "reason", "condition", "status"})),
    "kube_node_status_condition": ("kube-state-metrics", frozenset({"node", "condition", "status"})),
    "kube_node_status_allocatable": ("kube-state-metrics", frozenset({"node", "resource", "unit"})),
    "redis_up": ("redis_exporter", _REDIS),
    "redis_connected_clients": ("redis_exporter", _REDIS),
    "redis_memory_used_bytes": ("redis_exporter", _REDIS),
    "redis_memory_max_bytes": ("redis_exporter", _REDIS),
    "redis_rejected_connections_total": ("redis_exporter", _REDIS),
    "redis_acl_access_denied_auth_total": ("redis_exporter", _REDIS),
    "redis_commands_failed_calls_total": ("redis_exporter", _REDIS | {"cmd"}),
    "redis_commands_rejected_calls_total": ("redis_exporter", _REDIS | {"cmd"}),
    "redis_errors_total": ("redis_exporter", _REDIS | {"err"}),
    # collector kafkametrics receiver (opentelemetry-collector-contrib receiver/kafkametricsreceiver
    # metadata.yaml: kafka.brokers, kafka.consumer_group.lag / lag_sum / members), under the names
    # the astronomy contract fixes
    "kafka_brokers": ("collector-kafkametrics", frozenset()),
    "kafka_consumer_group_lag": ("collector-kafkametrics", frozenset({"group", "topic", "partition"})),
    "kafka_consumer_group_lag_sum": ("collector-kafkametrics", frozenset({"group", "topic"})),
    "kafka_consumer_group_members": ("collector-kafkametrics", frozenset({"group"})),
    # prometheus-community postgres_exporter (collector/pg_stat_database.go; pg_up from
    # cmd/postgres_exporter), multi-target mode like redis_exporter
    "pg_up": ("postgres_exporter", _PG),
    "pg_stat_database_numbackends": ("postgres_exporter", _PG | {"datname"}),
    "pg_stat_database_xact_rollback": ("postgres_exporter", _PG | {"datname"}),
    # prometheus/memcached_exporter (pkg/exporter/exporter.go), multi-target mode like redis_exporter
    "memcached_up": ("memcached_exporter", _MEMCACHED),
    "memcached_current_items": ("memcached_exporter", _MEMCACHED),
    "memcached_current_bytes": ("memcached_exporter", _MEMCACHED),
    "memcached_limit_bytes": ("memcached_exporter", _MEMCACHED),
    "memcached_current_connections": ("memcached_exporter", _MEMCACHED),
    "memcached_items_evicted_total": ("memcached_exporter", _MEMCACHED),
    "memcached_items_reclaimed_total": ("memcached_exporter", _MEMCACHED),
    "memcached_item_too_large_total": ("memcached_exporter", _MEMCACHED),
    "memcached_commands_total": ("memcached_exporter", _MEMCACHED | {"command", "status"}),
    # percona/mongodb_exporter (exporter/exporter.go, exporter/metrics.go)
    "mongodb_up": ("mongodb_exporter", _MONGO),
    "mongodb_ss_connections": ("mongodb_exporter", _MONGO | {"conn_type"}),
    "mongodb_ss_opcounters": ("mongodb_exporter", _MONGO | {"legacy_op_type"}),
    "mongodb_ss_asserts": ("mongodb_exporter", _MONGO | {"assert_type"}),
    # prometheus/mysqld_exporter (mysqld_exporter.go for mysql_up; collector/global_status.go:
    # SHOW GLOBAL STATUS under mysql_global_status_, Com_* as commands_total{command})
    "mysql_up": ("mysqld_exporter", _MYSQL),
    "mysql_global_status_threads_connected": ("mysqld_exporter", _MYSQL),
    "mysql_global_status_aborted_connects": ("mysqld_exporter", _MYSQL),
    "mysql_global_status_commands_total": ("mysqld_exporter", _MYSQL | {"command"}),
}


def labels_of(metric: str) -> frozenset[str] | None:
    """The labels `metric` carries on a real cluster, or None when nothing produces it."""
    entry = SERIES.get(metric)
    return None if entry is None else entry[1]
