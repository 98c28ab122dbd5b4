"""Kubernetes-shaped objects of the twin and their API JSON.

Tools print these objects the same way on the twin and on a cluster, so `to_k8s()` follows the
Kubernetes API field names (apps/v1 Deployment and ReplicaSet, v1 Pod, Service, ConfigMap, Node,
Event). Virtual seconds become RFC 3339 timestamps counted from a fixed epoch.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pytest_marathon.twin.envvars import env_names

if TYPE_CHECKING:
    from pytest_marathon.twin.appspec import DeploymentSpec

EPOCH = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
# The API server's default spec.revisionHistoryLimit for apps/v1 Deployments
# (pkg/apis/apps/v1/defaults.go); the deployment controller deletes older idle ReplicaSets.
REVISION_HISTORY_LIMIT = 10
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
CHANGE_CAUSE_ANNOTATION = "kubernetes.io/change-cause"


def timestamp(t: float | None) -> str | None:
    if t is None:
        return None
    return (EPOCH + timedelta(seconds=round(t, 3))).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class PodTemplate:
    """What a ReplicaSet stamps out: everything a rollout can change.

    `container`, `port_name`, `args` and `env_order` are the container spec's own facts as the
    manifest states them (upstream names every container `server`, redis `redis`); `env_order`
    is the manifest's order of env entries, which `$(VAR)` references depend on."""

    image: str
    env: dict[str, str]
    secret_env: dict[str, tuple[str, str]]
    resources: dict[str, dict[str, str]]
    probes: dict[str, dict[str, Any]]
    restarted_at: str = ""
    container: str = "server"
    port_name: str = ""
    args: tuple[str, ...] = ()
    env_order: tuple[str, ...] = ()
    # the container's command (empty: the image's entrypoint); names the program a multi-binary
    # image runs (twin/programs.py)
    command: tuple[str, ...] = ()
    # the pod spec's nodeSelector: the scheduler places the pod only on a node carrying every
    # label (a manifest's templates have none; AIOpsLab's assign_to_non_existent_node adds one)
    node_selector: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, dep: DeploymentSpec) -> PodTemplate:
        """The template an app definition's deployment starts with: the twin's first revision
        and the rendered manifests (pytest_marathon/deploy/manifests.py) both build it here."""
        return cls(
            image=dep.image,
            env=dict(dep.env),
            secret_env=dict(dep.secret_env),
            resources={k: dict(v) for k, v in dep.resources.items()},
            probes={k: dict(v) for k, v in dep.probes.items()},
            container=dep.container,
            port_name=dep.port_name,
            args=dep.args,
            env_order=dep.env_order,
            command=dep.command,
        )

    def copy(self) -> PodTemplate:
        return copy.deepcopy(self)

    def hash(self) -> str:
        """10 hex chars, stable across processes (pod-template-hash)."""
        doc = {
            "image": self.image,
            "env": self.env,
            "secret_env": {k: list(v) for k, v in self.secret_env.items()},
            "resources": self.resources,
            "probes": self.probes,
            "restarted_at": self.restarted_at,
            "container": self.container,
            "port_name": self.port_name,
            "args": list(self.args),
        }
        if self.node_selector:  # absent from the hash when unset: the manifests' hashes stay
            doc["node_selector"] = self.node_selector
        if self.command:  # likewise: apps whose manifests set no command keep their hashes
            doc["command"] = list(self.command)
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:10]

    def env_names(self) -> list[str]:
        """The env entries' names in the container's list order."""
        return env_names(self.env_order, self.env, self.secret_env)

    def container_k8s(self, port: int) -> dict[str, Any]:
        env: list[dict[str, Any]] = []
        for k in self.env_names():
            if k in self.secret_env:
                s, key = self.secret_env[k]
                env.append({"name": k, "valueFrom": {"secretKeyRef": {"name": s, "key": key}}})
            else:
                env.append({"name": k, "value": self.env[k]})
        container_port: dict[str, Any] = {"containerPort": port, "protocol": "TCP"}
        if self.port_name:
            container_port = {"name": self.port_name, **container_port}
        container: dict[str, Any] = {
            "name": self.container,
            **({"command": list(self.command)} if self.command else {}),
            "image": self.image,
            **({"args": list(self.args)} if self.args else {}),
            "ports": [container_port],
            "env": env,
            "resources": copy.deepcopy(self.resources),
        }
        for kind, probe in sorted(self.probes.items()):
            container[f"{kind}Probe"] = probe_k8s(probe)
        return container


def pod_uid(name: str, namespace: str) -> str:
    """A UUID-shaped uid fixed by the pod's name (the API server draws random ones; the twin stays
    deterministic)."""
    h = hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def probe_k8s(probe: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if probe["type"] == "grpc":
        out["grpc"] = {"port": probe["port"]}
    elif probe["type"] == "http":
        out["httpGet"] = {"path": probe.get("path", "/"), "port": probe["port"]}
        if probe.get("httpHeaders"):
            out["httpGet"]["httpHeaders"] = [dict(h) for h in probe["httpHeaders"]]
    else:
        out["tcpSocket"] = {"port": probe["port"]}
    for key in ("initialDelaySeconds", "periodSeconds", "failureThreshold"):
        if key in probe:
            out[key] = probe[key]
    return out


@dataclass
class ReplicaSet:
    name: str
    deployment: str
    template: PodTemplate
    template_hash: str
    revision: int
    change_cause: str
    created_at: float
    replicas: int = 0


@dataclass
class Deployment:
    name: str
    port: int
    template: PodTemplate
    replicas: int
    generation: int = 1
    observed_generation: int = 1
    progress_since: float = 0.0
    progressing_reason: str = "NewReplicaSetAvailable"
    rollout_complete_at: float | None = 0.0
    replica_sets: list[ReplicaSet] = field(default_factory=list)
    strategy_type: str = "RollingUpdate"
    max_surge: str = "25%"
    max_unavailable: str = "25%"
    progress_deadline_seconds: int = 600
    revision_history_limit: int = REVISION_HISTORY_LIMIT
    # (template, its hash): a held template is never changed in place (a change copies it and
    # makes a new revision), so its pod-template-hash is worked out once per template
    _hashed: tuple[PodTemplate, str] | None = field(default=None, repr=False, compare=False)

    def parse_strategy(self, strategy: Mapping[str, Any]) -> tuple[str, str, str]:
        """(type, maxSurge, maxUnavailable) a spec.strategy document (`{"type": "Recreate"}`, or
        RollingUpdate with an optional rollingUpdate block) would give this deployment; checked
        apart from applying so a bad release changes nothing. Raises ValueError naming the field."""
        if not isinstance(strategy, Mapping):
            raise ValueError(f"strategy must be a mapping, got {strategy!r}")
        kind = strategy.get("type")
        if kind not in ("Recreate", "RollingUpdate"):
            raise ValueError(f"strategy.type must be Recreate or RollingUpdate, got {kind!r}")
        rolling = strategy.get("rollingUpdate") or {}
        if kind == "Recreate" and rolling:
            raise ValueError("strategy.rollingUpdate may only be set when type is RollingUpdate")
        if not isinstance(rolling, Mapping) or set(rolling) - {"maxSurge", "maxUnavailable"}:
            raise ValueError(f"strategy.rollingUpdate takes maxSurge and maxUnavailable, got {rolling!r}")
        surge = str(rolling.get("maxSurge", self.max_surge))
        unavailable = str(rolling.get("maxUnavailable", self.max_unavailable))
        for name, value in (("maxSurge", surge), ("maxUnavailable", unavailable)):
            if not value.removesuffix("%").isdigit():
                raise ValueError(f"strategy.rollingUpdate.{name} must be a count or a percentage, got {value!r}")
        return kind, surge, unavailable

    def strategy(self) -> tuple[str, str, str]:
        return self.strategy_type, self.max_surge, self.max_unavailable

    def strategy_k8s(self) -> dict[str, Any]:
        """spec.strategy as the API prints it (Recreate carries no rollingUpdate block)."""
        if self.strategy_type == "Recreate":
            return {"type": "Recreate"}
        return {"type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": _int_or_string(self.max_surge),
                                  "maxUnavailable": _int_or_string(self.max_unavailable)}}

    def template_hash(self) -> str:
        hashed = self._hashed
        if hashed is None or hashed[0] is not self.template:
            hashed = self._hashed = (self.template, self.template.hash())
        return hashed[1]

    def current_rs(self) -> ReplicaSet | None:
        wanted = self.template_hash()
        for rs in self.replica_sets:
            if rs.template_hash == wanted:
                return rs
        return None

    def revision(self) -> int:
        rs = self.current_rs()
        return rs.revision if rs else 0


@dataclass
class Pod:
    name: str
    deployment: str
    replica_set: str
    template: PodTemplate
    node: str
    created_at: float
    start_delay: float
    phase: str = "Pending"
    waiting_reason: str | None = "ContainerCreating"
    running: bool = False
    ready: bool = False
    started_at: float | None = None
    ready_at: float | None = None
    restart_count: int = 0
    last_termination: dict[str, Any] | None = None
    backoff_until: float | None = None
    backoff_seconds: float = 0.0
    backoff_updated_at: float | None = None
    pull_backoff_until: float | None = None
    pull_backoff_seconds: float = 0.0
    deleted_at: float | None = None
    grace_seconds: int = 30
    env: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()  # the container's args with `$(VAR)` expanded at start
    listen_port: int = 0
    instance: Any = None
    liveness_failures: int = 0
    readiness_failures: int = 0
    ip: str = ""
    cpu_seconds: float = 0.0
    cfs_periods: float = 0.0
    cfs_throttled: float = 0.0
    cpu_demand: float = 0.0
    utilisation: float = 0.0
    memory_bytes: float = 0.0

    @property
    def terminating(self) -> bool:
        """Deleted (deletionTimestamp set) but not gone yet: no longer counted by its ReplicaSet."""
        return self.deleted_at is not None

    def state_k8s(self) -> dict[str, Any]:
        if self.running:
            return {"running": {"startedAt": timestamp(self.started_at)}}
        if self.waiting_reason is None and self.last_termination:
            # exited and not yet restarted by the kubelet's next sync
            return {"terminated": {"reason": self.last_termination["reason"],
                                   "exitCode": self.last_termination["exitCode"],
                                   "finishedAt": timestamp(self.last_termination["t"])}}
        return {"waiting": {"reason": self.waiting_reason or "ContainerCreating"}}


@dataclass
class Node:
    name: str
    zone: str
    cpu: float
    memory: int
    ready: bool = True
    not_ready_since: float | None = None
    # The Ready condition as the node lifecycle controller last set it: it lags `ready` (whether
    # the kubelet is alive) by the node-monitor grace period.
    condition_ready: bool = True
    unreachable_since: float = 0.0
    images: set[str] = field(default_factory=set)


@dataclass
class Event:
    t: float
    type: str
    reason: str
    kind: str
    name: str
    message: str
    count: int = 1
    last_t: float = 0.0

    def to_k8s(self, namespace: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{self.name}.{int(self.t * 1000):x}", "namespace": namespace},
            "type": self.type,
            "reason": self.reason,
            "involvedObject": {"kind": self.kind, "name": self.name, "namespace": namespace},
            "message": self.message,
            "count": self.count,
            "firstTimestamp": timestamp(self.t),
            "lastTimestamp": timestamp(self.last_t or self.t),
        }


def deployment_k8s(dep: Deployment, namespace: str, pods: list[Pod], now: float) -> dict[str, Any]:
    current = dep.current_rs()
    ready = [p for p in pods if p.ready]
    updated = [p for p in pods if current and p.replica_set == current.name]
    available = len(ready)
    complete = dep.rollout_complete_at is not None
    annotations = {REVISION_ANNOTATION: str(dep.revision())}
    if current and current.change_cause:
        annotations[CHANGE_CAUSE_ANNOTATION] = current.change_cause
    progressing_status = "False" if dep.progressing_reason == "ProgressDeadlineExceeded" else "True"
    progressing_reason = dep.progressing_reason if not complete else "NewReplicaSetAvailable"
    minimum = available >= dep.replicas - _unavailable_allowance(dep)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": dep.name,
            "namespace": namespace,
            "generation": dep.generation,
            "labels": {"app": dep.name},
            "annotations": annotations,
        },
        "spec": {
            "replicas": dep.replicas,
            "selector": {"matchLabels": {"app": dep.name}},
            "progressDeadlineSeconds": dep.progress_deadline_seconds,
            "revisionHistoryLimit": dep.revision_history_limit,
            "strategy": dep.strategy_k8s(),
            "template": _template_k8s(dep.name, dep.port, dep.template),
        },
        "status": {
            "observedGeneration": dep.observed_generation,
            "replicas": len(pods),
            "updatedReplicas": len(updated),
            "readyReplicas": available,
            "availableReplicas": available,
            "unavailableReplicas": max(0, dep.replicas - available) if dep.replicas else 0,
            "conditions": [
                {
                    "type": "Available",
                    "status": "True" if minimum else "False",
                    "reason": "MinimumReplicasAvailable" if minimum else "MinimumReplicasUnavailable",
                    "message": "Deployment has minimum availability." if minimum
                    else "Deployment does not have minimum availability.",
                },
                {
                    "type": "Progressing",
                    "status": progressing_status,
                    "reason": progressing_reason,
                    "message": _progressing_message(progressing_reason, current.name if current else dep.name),
                    "lastUpdateTime": timestamp(dep.progress_since),
                },
            ],
        },
    }


def _progressing_message(reason: str, rs_name: str) -> str:
    """The Progressing condition's message, as pkg/controller/deployment/util/deployment_util.go
    and progress.go word it (a timed-out rollout is a condition, never an event)."""
    return {
        "NewReplicaSetAvailable": f'ReplicaSet "{rs_name}" has successfully progressed.',
        "ProgressDeadlineExceeded": f'ReplicaSet "{rs_name}" has timed out progressing.',
        "NewReplicaSetCreated": f'Created new replica set "{rs_name}"',
    }.get(reason, f'ReplicaSet "{rs_name}" is progressing.')


def _int_or_string(value: str) -> int | str:
    """An IntOrString field as the API prints it: counts are numbers, percentages strings."""
    return int(value) if value.isdigit() else value


def _unavailable_allowance(dep: Deployment) -> int:
    if dep.strategy_type == "Recreate":
        return 0  # as the deployment controller: only a rolling update tolerates missing replicas
    return int(resolve_fraction(dep.max_unavailable, dep.replicas, round_up=False))


def resolve_fraction(value: str, replicas: int, *, round_up: bool) -> int:
    """maxSurge/maxUnavailable as a pod count (percentages round like Kubernetes does)."""
    text = str(value)
    if text.endswith("%"):
        exact = int(text[:-1]) * replicas / 100
        whole = int(exact)
        return whole + 1 if round_up and exact > whole else whole
    return int(text)


def _template_k8s(name: str, port: int, template: PodTemplate) -> dict[str, Any]:
    annotations = {}
    if template.restarted_at:
        annotations["kubectl.kubernetes.io/restartedAt"] = template.restarted_at
    spec: dict[str, Any] = {"containers": [template.container_k8s(port)]}
    if template.node_selector:
        spec["nodeSelector"] = dict(template.node_selector)
    return {"metadata": {"labels": {"app": name}, "annotations": annotations}, "spec": spec}


def replicaset_k8s(rs: ReplicaSet, namespace: str, port: int, ready: int) -> dict[str, Any]:
    annotations = {REVISION_ANNOTATION: str(rs.revision)}
    if rs.change_cause:
        annotations[CHANGE_CAUSE_ANNOTATION] = rs.change_cause
    template = _template_k8s(rs.deployment, port, rs.template)
    # the deployment controller stamps the hash into the ReplicaSet's pod template (that is how
    # its pods get the label); `kubectl rollout undo` ignores it when comparing templates
    template["metadata"]["labels"]["pod-template-hash"] = rs.template_hash
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": rs.name,
            "namespace": namespace,
            "annotations": annotations,
            "labels": {"app": rs.deployment, "pod-template-hash": rs.template_hash},
            "ownerReferences": [{"kind": "Deployment", "name": rs.deployment}],
            "creationTimestamp": timestamp(rs.created_at),
        },
        "spec": {"replicas": rs.replicas, "template": template},
        "status": {"replicas": rs.replicas, "readyReplicas": ready},
    }


def pod_k8s(pod: Pod, namespace: str, port: int) -> dict[str, Any]:
    container = pod.template.container_k8s(port)
    status: dict[str, Any] = {
        "name": container["name"],
        "image": pod.template.image,
        "ready": pod.ready,
        "started": pod.running,
        "restartCount": pod.restart_count,
        "state": pod.state_k8s(),
    }
    if pod.last_termination:
        status["lastState"] = {
            "terminated": {
                "reason": pod.last_termination["reason"],
                "exitCode": pod.last_termination["exitCode"],
                "finishedAt": timestamp(pod.last_termination["t"]),
            }
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod.name,
            "namespace": namespace,
            "uid": pod_uid(pod.name, namespace),
            "labels": {"app": pod.deployment, "pod-template-hash": pod.replica_set.rsplit("-", 1)[-1]},
            "ownerReferences": [{"kind": "ReplicaSet", "name": pod.replica_set}],
            "creationTimestamp": timestamp(pod.created_at),
            **({"deletionTimestamp": timestamp(pod.deleted_at + pod.grace_seconds),
                "deletionGracePeriodSeconds": pod.grace_seconds} if pod.deleted_at is not None else {}),
        },
        "spec": {"nodeName": pod.node, "terminationGracePeriodSeconds": pod.grace_seconds,
                 "containers": [container],
                 **({"nodeSelector": dict(pod.template.node_selector)} if pod.template.node_selector else {})},
        "status": {
            "phase": pod.phase,
            "podIP": pod.ip,
            "conditions": [
                {"type": "Ready", "status": "True" if pod.ready else "False"},
                {"type": "ContainersReady", "status": "True" if pod.ready else "False"},
            ],
            "containerStatuses": [status],
        },
    }


def unscheduled_pod_k8s(pod: Pod, namespace: str, port: int, message: str) -> dict[str, Any]:
    """A pod the scheduler could not place: Pending, no node, no IP, no container statuses, and
    PodScheduled False with reason Unschedulable and the scheduler's message
    (pkg/scheduler/schedule_one.go handleSchedulingFailure, v1.PodReasonUnschedulable)."""
    doc = pod_k8s(pod, namespace, port)
    del doc["spec"]["nodeName"]
    doc["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]}
    return doc


def node_labels(node: Node) -> dict[str, str]:
    """The well-known labels the kubelet sets on its node (k8s.io/api core/v1 well_known_labels.go)."""
    return {"topology.kubernetes.io/zone": node.zone, "kubernetes.io/hostname": node.name}


def service_k8s(name: str, namespace: str, port: int, target: int, selector: str, svc_type: str, cluster_ip: str,
                port_name: str = "", traffic_distribution: str = "") -> dict[str, Any]:
    """A v1 Service; its port carries the manifest's name (upstream: `http`, `grpc`, `tcp-redis`)."""
    service_port: dict[str, Any] = {"port": port, "targetPort": target, "protocol": "TCP"}
    if port_name:
        service_port = {"name": port_name, **service_port}
    spec: dict[str, Any] = {"type": svc_type, "clusterIP": cluster_ip, "selector": {"app": selector},
                            "ports": [service_port]}
    if traffic_distribution:
        spec["trafficDistribution"] = traffic_distribution
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def configmap_k8s(name: str, namespace: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": dict(sorted(data.items())),
    }


def node_k8s(node: Node, pods_on_node: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "labels": node_labels(node),
        },
        # a node whose kubelet stops reporting becomes Ready=Unknown and is tainted unreachable
        # (pkg/controller/nodelifecycle/node_lifecycle_controller.go)
        "spec": {"taints": [] if node.condition_ready
                 else [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]},
        "status": {
            "allocatable": {"cpu": f"{node.cpu:g}", "memory": f"{node.memory // 1024**2}Mi", "pods": "110"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if node.condition_ready else "Unknown",
                    "reason": "KubeletReady" if node.condition_ready else "NodeStatusUnknown",
                }
            ],
            "podCount": pods_on_node,
        },
    }
