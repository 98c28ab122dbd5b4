"""The exporters a cluster runs (cAdvisor, kube-state-metrics, redis_exporter), read off the twin.

Called at every scrape; request-level series come from `Telemetry.scrape_requests`. What each
series looks like follows the exporter's source (kubernetes/kube-state-metrics
`internal/store/pod.go`, `internal/store/deployment.go`, `internal/store/utils.go`
`addConditionMetrics`; oliver006/redis_exporter `exporter/exporter.go`, `exporter/info.go`); the
inventory the alert rules are checked against is `deploy/series.py`.
"""

from __future__ import annotations

from pytest_marathon.twin.cluster import Cluster
from pytest_marathon.twin.datastore import RedisServer
from pytest_marathon.twin.objects import deployment_k8s
from pytest_marathon.twin.quantities import parse_cpu, parse_memory
from pytest_marathon.twin.telemetry import Telemetry

#: redis_exporter run in multi-target mode (its README's `/scrape?target=` job): Prometheus
#: relabels the target URL into `instance`; the exporter adds no label of its own.
REDIS_JOB = "redis_exporter_targets"


def scrape_cluster(tel: Telemetry, cluster: Cluster, servers: dict[str, RedisServer], down: set[str], t: float) -> None:
    gauge = tel.gauge
    tel.retire_pods(t, {pod.name for pod in cluster.pods.values()})
    for pod in sorted(cluster.pods.values(), key=lambda p: p.name):
        # the container's own name, as cAdvisor and kube-state-metrics label it: `server` for
        # every Online Boutique service, `redis` for redis-cart (release/kubernetes-manifests.yaml)
        ids = (("pod", pod.name), ("container", pod.template.container))
        limits = pod.template.resources["limits"]
        memory_limit = float(parse_memory(limits["memory"]))
        # cAdvisor reports a container's cgroup only while it runs: none while it is created,
        # pulled or backing off (a zero there would read as a 0 -> working-set jump at start)
        for name, value in (
            ("container_cpu_usage_seconds_total", pod.cpu_seconds),
            ("container_cpu_cfs_periods_total", pod.cfs_periods),
            ("container_cpu_cfs_throttled_periods_total", pod.cfs_throttled),
            ("container_memory_working_set_bytes", pod.memory_bytes),
            ("container_spec_memory_limit_bytes", memory_limit),
        ):
            if pod.running:
                gauge(t, name, ids, value)
            else:
                tel.absent(t, name, ids)
        gauge(t, "kube_pod_container_status_restarts_total", ids, pod.restart_count)
        # one series, value 1, for the current waiting reason only (pod.go
        # `createPodContainerStatusWaitingReasonFamilyGenerator`)
        waiting = [] if pod.running or not pod.waiting_reason else [((*ids, ("reason", pod.waiting_reason)), 1.0)]
        tel.gauge_set(t, "kube_pod_container_status_waiting_reason", pod.name, waiting)
        if pod.last_termination:
            gauge(t, "kube_pod_container_status_last_terminated_reason",
                  (*ids, ("reason", pod.last_termination["reason"])), 1.0)
        for condition, value in (("true", pod.ready), ("false", not pod.ready), ("unknown", False)):
            gauge(t, "kube_pod_status_ready", (("pod", pod.name), ("condition", condition)), 1.0 if value else 0.0)
        if "cpu" in limits:  # kube-state-metrics writes a series per limit the container sets
            gauge(t, "kube_pod_container_resource_limits", (*ids, ("resource", "cpu"), ("unit", "core")),
                  parse_cpu(limits["cpu"]))
        gauge(t, "kube_pod_container_resource_limits", (*ids, ("resource", "memory"), ("unit", "byte")),
              memory_limit)
        gauge(t, "kube_pod_info", (("pod", pod.name), ("node", pod.node), ("created_by_name", pod.replica_set)), 1.0)
    for name, dep in sorted(cluster.deployments.items()):
        pods = cluster.pods_of(name)
        ready = sum(1 for p in pods if p.ready)
        current = dep.current_rs()
        updated = sum(1 for p in pods if p.replica_set == current.name)
        ids = (("deployment", name),)
        gauge(t, "kube_deployment_spec_replicas", ids, dep.replicas)
        gauge(t, "kube_deployment_status_replicas", ids, len(pods))
        gauge(t, "kube_deployment_status_replicas_available", ids, ready)
        gauge(t, "kube_deployment_status_replicas_unavailable", ids, max(0, dep.replicas - ready))
        gauge(t, "kube_deployment_status_replicas_updated", ids, updated)
        gauge(t, "kube_deployment_metadata_generation", ids, dep.generation)
        gauge(t, "kube_deployment_status_observed_generation", ids, dep.observed_generation)
        # kube-state-metrics reads the object's conditions, with their `reason` (deployment.go)
        conditions = deployment_k8s(dep, tel.namespace, pods, t)["status"]["conditions"]
        tel.gauge_set(t, "kube_deployment_status_condition", name, [
            ((*ids, ("reason", c["reason"]), ("condition", c["type"]), ("status", status)),
             1.0 if c["status"].lower() == status else 0.0)
            for c in conditions for status in ("true", "false", "unknown")
        ])
    for node in cluster.nodes.values():
        ids = (("node", node.name),)
        for status in ("true", "false", "unknown"):
            # kube-state-metrics reads the Ready condition, which lags a silent kubelet by the
            # node-monitor grace period
            ready = node.condition_ready
            value = (status == "true" and ready) or (status == "unknown" and not ready)
            gauge(t, "kube_node_status_condition", (*ids, ("condition", "Ready"), ("status", status)), 1.0 if value else 0.0)
        gauge(t, "kube_node_status_allocatable", (*ids, ("resource", "cpu"), ("unit", "core")), node.cpu)
        gauge(t, "kube_node_status_allocatable", (*ids, ("resource", "memory"), ("unit", "byte")), node.memory)
    for dep_name, dep in sorted(cluster.spec.deployments.items()):
        if dep.kind != "datastore":
            continue
        live = [servers[p.name] for p in sorted(cluster.pods_of(dep_name), key=lambda p: p.name)
                if p.running and p.name in servers]
        up = bool(live) and dep_name not in down
        service = next((s for s in sorted(cluster.spec.services.values(), key=lambda s: s.name)
                        if s.selector == dep_name), None)
        target = f"redis://{service.name}:{service.port}" if service else f"redis://{dep_name}:6379"
        ids = (("job", REDIS_JOB), ("instance", target))
        gauge(t, "redis_up", ids, 1.0 if up else 0.0)
        if not up:
            # a failed connection exports redis_up 0 and nothing from INFO (exporter.go `scrapeRedisHost`)
            for name in ("redis_connected_clients", "redis_memory_used_bytes", "redis_memory_max_bytes",
                         "redis_rejected_connections_total", "redis_acl_access_denied_auth_total"):
                tel.absent(t, name, ids)
            for name in ("redis_commands_failed_calls_total", "redis_commands_rejected_calls_total", "redis_errors_total"):
                tel.gauge_set(t, name, dep_name, [])
            continue
        clients = sum(len(cluster.ready_pods(name)) for name in _clients_of(cluster, dep_name))
        gauge(t, "redis_connected_clients", ids, float(clients))
        gauge(t, "redis_memory_used_bytes", ids, float(sum(s.used_bytes for s in live)))
        gauge(t, "redis_memory_max_bytes", ids, float(max((s.maxmemory for s in live), default=0)))
        gauge(t, "redis_rejected_connections_total", ids, 0.0)
        gauge(t, "redis_acl_access_denied_auth_total", ids, float(sum(s.acl_access_denied_auth for s in live)))
        for name, label, attr in (("redis_commands_failed_calls_total", "cmd", "failed_calls"),
                                  ("redis_commands_rejected_calls_total", "cmd", "rejected_calls"),
                                  ("redis_errors_total", "err", "errors")):
            totals: dict[str, float] = {}
            for server in live:
                for key, count in getattr(server, attr).items():
                    totals[key] = totals.get(key, 0.0) + count
            tel.gauge_set(t, name, dep_name, [((*ids, (label, key)), value) for key, value in sorted(totals.items())])


def _clients_of(cluster: Cluster, datastore: str) -> list[str]:
    """Deployments whose env points at the datastore's Service (its connected clients)."""
    hosts = {svc.name for svc in cluster.spec.services.values() if svc.selector == datastore}
    return sorted(
        name for name, dep in cluster.deployments.items()
        if any(value.rsplit(":", 1)[0].split(".", 1)[0] in hosts for value in dep.template.env.values())
    )
