"""The exporters a cluster runs (cAdvisor, kube-state-metrics, redis exporter), read off the twin.

Called at every scrape; request-level series come from `Telemetry.scrape_requests`.
"""

from __future__ import annotations

from pytest_marathon.twin.cluster import Cluster
from pytest_marathon.twin.datastore import RedisServer
from pytest_marathon.twin.quantities import parse_cpu, parse_memory
from pytest_marathon.twin.telemetry import WAITING_REASONS, Telemetry


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
        for reason in WAITING_REASONS:
            gauge(t, "kube_pod_container_status_waiting_reason", (*ids, ("reason", reason)),
                  1.0 if not pod.running and pod.waiting_reason == reason else 0.0)
        if pod.last_termination:
            gauge(t, "kube_pod_container_status_last_terminated_reason",
                  (*ids, ("reason", pod.last_termination["reason"])), 1.0)
        for condition, value in (("true", pod.ready), ("false", not pod.ready)):
            gauge(t, "kube_pod_status_ready", (("pod", pod.name), ("condition", condition)), 1.0 if value else 0.0)
        gauge(t, "kube_pod_container_resource_limits", (*ids, ("resource", "cpu"), ("unit", "core")), parse_cpu(limits["cpu"]))
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
        available = ready >= dep.replicas
        stalled = dep.progressing_reason == "ProgressDeadlineExceeded"
        for condition, ok in (("Available", available), ("Progressing", not stalled)):
            for status in ("true", "false", "unknown"):
                value = (status == "true" and ok) or (status == "false" and not ok)
                gauge(t, "kube_deployment_status_condition", (*ids, ("condition", condition), ("status", status)),
                      1.0 if value else 0.0)
    for node in cluster.nodes.values():
        ids = (("node", node.name),)
        for status in ("true", "false", "unknown"):
            # kube-state-metrics reads the Ready condition, which lags a silent kubelet by the
            # node-monitor grace period
            ready = node.condition_ready
            value = (status == "true" and ready) or (status == "unknown" and not ready)
            gauge(t, "kube_node_status_condition", (*ids, ("condition", "Ready"), ("status", status)), 1.0 if value else 0.0)
        gauge(t, "kube_node_status_allocatable", (*ids, ("resource", "cpu")), node.cpu)
        gauge(t, "kube_node_status_allocatable", (*ids, ("resource", "memory")), node.memory)
    for dep_name, dep in sorted(cluster.spec.deployments.items()):
        if dep.kind != "datastore":
            continue
        live = [servers[p.name] for p in sorted(cluster.pods_of(dep_name), key=lambda p: p.name)
                if p.running and p.name in servers]
        up = bool(live) and dep_name not in down
        ids = (("service", dep_name),)
        gauge(t, "redis_up", ids, 1.0 if up else 0.0)
        clients = sum(len(cluster.ready_pods(name)) for name in _clients_of(cluster, dep_name))
        gauge(t, "redis_connected_clients", ids, float(clients) if up else 0.0)
        gauge(t, "redis_memory_used_bytes", ids, float(sum(s.used_bytes for s in live)))
        gauge(t, "redis_memory_max_bytes", ids, float(max((s.maxmemory for s in live), default=0)))
        gauge(t, "redis_rejected_connections_total", ids, float(sum(s.rejected_connections for s in live)))
        gauge(t, "redis_commands_failed_total", ids, float(sum(s.commands_failed for s in live)))


def _clients_of(cluster: Cluster, datastore: str) -> list[str]:
    """Deployments whose env points at the datastore's Service (its connected clients)."""
    hosts = {svc.name for svc in cluster.spec.services.values() if svc.selector == datastore}
    return sorted(
        name for name, dep in cluster.deployments.items()
        if any(value.rsplit(":", 1)[0].split(".", 1)[0] in hosts for value in dep.template.env.values())
    )
