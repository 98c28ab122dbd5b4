"""The control plane of the twin: deployments, rollouts, pods, probes, crashes, nodes.

It reproduces the Kubernetes behaviours that faults and repairs depend on: a RollingUpdate that
keeps the old pod serving while a new one is not ready (and stalls until the progress deadline),
`rollout undo` as a new revision with the old template, container restarts with CrashLoopBackOff
back-off (10 s doubling to 300 s, reset after 10 min of running), OOMKilled when the working set
passes the limit, probes that fail when their port or path is wrong, and eviction from a NotReady
node after 300 s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from pytest_marathon.determinism import rng_for
from pytest_marathon.twin.appspec import AppSpec
from pytest_marathon.twin.events import EventLog
from pytest_marathon.twin.objects import (
    Deployment,
    Node,
    Pod,
    PodTemplate,
    ReplicaSet,
    resolve_fraction,
    timestamp,
)
from pytest_marathon.twin.quantities import parse_cpu, parse_memory

POD_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
BACKOFF_START = 10.0
BACKOFF_MAX = 300.0
BACKOFF_RESET_AFTER = 600.0
EVICTION_AFTER = 300.0
CREATE_DELAY = 2.0


class ContainerCrash(Exception):
    """The container process exited while starting (module-level code raised)."""


class ContainerRuntime(Protocol):
    def image_exists(self, image: str) -> bool: ...

    def start(self, pod: Pod) -> None:
        """Start the container's process (sets `pod.instance`); raise ContainerCrash on failure."""

    def stop(self, pod: Pod) -> None: ...


class Cluster:
    def __init__(self, spec: AppSpec, seed: int, events: EventLog, runtime: ContainerRuntime) -> None:
        self.spec = spec
        self.namespace = spec.namespace
        self.events = events
        self.runtime = runtime
        self.secrets: dict[str, dict[str, str]] = {k: dict(v) for k, v in spec.secrets.items()}
        self.configmaps: dict[str, dict[str, str]] = {k: dict(v) for k, v in spec.configmaps.items()}
        self.nodes: dict[str, Node] = {
            n.name: Node(n.name, n.zone, n.cpu, n.memory) for n in spec.nodes
        }
        self.deployments: dict[str, Deployment] = {}
        self.pods: dict[str, Pod] = {}
        self.down_listeners: set[str] = set()
        # Other controllers acting on the cluster each reconcile, before it (a chaos schedule
        # that keeps killing pods while it lasts).
        self.controllers: list[Callable[[float], None]] = []
        self._name_rng = rng_for(seed, "cluster", "pod-names")
        self._start_rng = rng_for(seed, "cluster", "pod-start")
        self._ip_counter = 10
        for name, dep in spec.deployments.items():
            template = PodTemplate(
                image=dep.image,
                env=dict(dep.env),
                secret_env=dict(dep.secret_env),
                resources={k: dict(v) for k, v in dep.resources.items()},
                probes={k: dict(v) for k, v in dep.probes.items()},
            )
            deployment = Deployment(name=name, port=dep.port, template=template, replicas=dep.replicas)
            self.deployments[name] = deployment
            self._new_revision(deployment, "", 0.0)

    # --- queries ------------------------------------------------------------------------------
    def pods_of(self, deployment: str) -> list[Pod]:
        return [p for p in self.pods.values() if p.deployment == deployment]

    def ready_pods(self, deployment: str) -> list[Pod]:
        return [p for p in self.pods.values() if p.deployment == deployment and p.ready]

    def limit_bytes(self, pod: Pod) -> int:
        return parse_memory(pod.template.resources["limits"]["memory"])

    def limit_cores(self, pod: Pod) -> float:
        return parse_cpu(pod.template.resources["limits"]["cpu"])

    # --- spec changes (a new revision each) ---------------------------------------------------
    def change_template(self, name: str, template: PodTemplate, change_cause: str, now: float) -> ReplicaSet:
        dep = self.deployments[name]
        dep.template = template
        dep.generation += 1
        dep.observed_generation = dep.generation
        return self._new_revision(dep, change_cause, now)

    def bump_generation(self, name: str) -> None:
        """A spec change outside the pod template (the rollout strategy): observed, no rollout."""
        dep = self.deployments[name]
        dep.generation += 1
        dep.observed_generation = dep.generation

    def _new_revision(self, dep: Deployment, change_cause: str, now: float) -> ReplicaSet:
        wanted = dep.template.hash()
        next_revision = max((rs.revision for rs in dep.replica_sets), default=0) + 1
        rs = next((r for r in dep.replica_sets if r.template_hash == wanted), None)
        if rs is None:
            rs = ReplicaSet(
                name=f"{dep.name}-{wanted}",
                deployment=dep.name,
                template=dep.template.copy(),
                template_hash=wanted,
                revision=next_revision,
                change_cause=change_cause,
                created_at=now,
            )
            dep.replica_sets.append(rs)
            self.events.add(now, "Normal", "ScalingReplicaSet", "Deployment", dep.name,
                            f"Scaled up replica set {rs.name} from 0 to {dep.replicas}")
        else:
            # `rollout undo` to a template that exists: that ReplicaSet takes the next revision
            rs.revision = next_revision
            rs.change_cause = change_cause or rs.change_cause
        dep.rollout_complete_at = None
        dep.progress_since = now
        dep.progressing_reason = "ReplicaSetUpdated"
        return rs

    def scale(self, name: str, replicas: int, now: float) -> None:
        dep = self.deployments[name]
        if replicas != dep.replicas:
            self.events.add(now, "Normal", "ScalingReplicaSet", "Deployment", name,
                            f"Scaled replica set {dep.current_rs().name} from {dep.replicas} to {replicas}")
        dep.replicas = replicas
        dep.generation += 1
        dep.observed_generation = dep.generation
        dep.rollout_complete_at = None
        dep.progress_since = now

    # --- the control loop -------------------------------------------------------------------
    def reconcile(self, now: float) -> None:
        for controller in self.controllers:
            controller(now)
        for node in self.nodes.values():
            self._node_lifecycle(node, now)
        for dep in self.deployments.values():
            self._rollout(dep, now)
        for pod in sorted(self.pods.values(), key=lambda p: p.name):
            self._pod_lifecycle(pod, now)
        for dep in self.deployments.values():
            self._progress(dep, now)

    def _node_lifecycle(self, node: Node, now: float) -> None:
        if node.ready or node.not_ready_since is None:
            return
        if now - node.not_ready_since < EVICTION_AFTER:
            return
        for pod in [p for p in self.pods.values() if p.node == node.name]:
            self.events.add(now, "Warning", "TaintManagerEviction", "Pod", pod.name,
                            f"Marking for deletion Pod {self.namespace}/{pod.name}")
            self._delete_pod(pod)

    def _rollout(self, dep: Deployment, now: float) -> None:
        current = dep.current_rs()
        assert current is not None
        desired = dep.replicas
        surge = resolve_fraction(dep.max_surge, desired, round_up=True)
        unavailable = resolve_fraction(dep.max_unavailable, desired, round_up=False)
        if surge == 0 and unavailable == 0:
            unavailable = 1
        old = [rs for rs in dep.replica_sets if rs is not current and rs.replicas > 0]
        if dep.strategy_type == "Recreate":
            self._recreate(dep, current, old, now)
            return
        total = sum(rs.replicas for rs in dep.replica_sets)
        if current.replicas > desired:
            current.replicas = desired
        elif current.replicas < desired:
            room = desired + surge - total
            current.replicas += max(0, min(desired - current.replicas, room))
        pods = self.pods_of(dep.name)
        for rs in old:
            unhealthy = [p for p in pods if p.replica_set == rs.name and not p.ready]
            rs.replicas -= min(rs.replicas, len(unhealthy))
        ready = sum(1 for p in pods if p.ready and (p.replica_set == current.name or any(p.replica_set == rs.name and rs.replicas > 0 for rs in old)))
        removable = ready - (desired - unavailable)
        for rs in sorted(old, key=lambda r: r.revision):
            take = max(0, min(rs.replicas, removable))
            if take:
                rs.replicas -= take
                removable -= take
                self.events.add(now, "Normal", "ScalingReplicaSet", "Deployment", dep.name,
                                f"Scaled down replica set {rs.name} to {rs.replicas}")
        for rs in dep.replica_sets:
            self._sync_pods(rs, now)

    def _recreate(self, dep: Deployment, current: ReplicaSet, old: list[ReplicaSet], now: float) -> None:
        """Recreate: every old pod goes before any new one starts, so two versions never serve
        at once (and nothing serves while the new version cannot start)."""
        for rs in sorted(old, key=lambda r: r.revision):
            rs.replicas = 0
            self.events.add(now, "Normal", "ScalingReplicaSet", "Deployment", dep.name,
                            f"Scaled down replica set {rs.name} to 0")
            self._sync_pods(rs, now)
        if any(p.replica_set != current.name for p in self.pods_of(dep.name)):
            return
        current.replicas = dep.replicas
        self._sync_pods(current, now)

    def _sync_pods(self, rs: ReplicaSet, now: float) -> None:
        mine = [p for p in self.pods.values() if p.replica_set == rs.name]
        if len(mine) > rs.replicas:
            mine.sort(key=lambda p: (p.ready, -p.created_at, p.name))
            for pod in mine[: len(mine) - rs.replicas]:
                self.events.add(now, "Normal", "Killing", "Pod", pod.name,
                                f"Stopping container {pod.deployment}")
                self._delete_pod(pod)
        for _ in range(rs.replicas - len(mine)):
            self._create_pod(rs, now)

    def _create_pod(self, rs: ReplicaSet, now: float) -> None:
        node = self._schedule(rs.template)
        suffix = "".join(self._name_rng.choice(POD_NAME_ALPHABET) for _ in range(5))
        name = f"{rs.name}-{suffix}"
        if node is None:
            self.events.add(now, "Warning", "FailedScheduling", "Pod", name,
                            "0/4 nodes are available: node(s) had untolerated taint or insufficient cpu.")
            return
        self._ip_counter += 1
        pod = Pod(
            name=name,
            deployment=rs.deployment,
            replica_set=rs.name,
            template=rs.template.copy(),
            node=node.name,
            created_at=now,
            start_delay=self._start_rng.uniform(8.0, 12.0),
            ip=f"10.8.{list(self.nodes).index(node.name)}.{self._ip_counter % 250 + 2}",
        )
        self.pods[name] = pod
        self.events.add(now, "Normal", "Scheduled", "Pod", name,
                        f"Successfully assigned {self.namespace}/{name} to {node.name}")

    def _schedule(self, template: PodTemplate) -> Node | None:
        want = parse_cpu(template.resources["requests"]["cpu"])
        best: tuple[float, str] | None = None
        for node in self.nodes.values():
            if not node.ready:
                continue
            used = sum(parse_cpu(p.template.resources["requests"]["cpu"]) for p in self.pods.values() if p.node == node.name)
            if used + want > node.cpu:
                continue
            if best is None or (used, node.name) < best:
                best = (used, node.name)
        return self.nodes[best[1]] if best else None

    def _delete_pod(self, pod: Pod) -> None:
        if pod.instance is not None:
            self.runtime.stop(pod)
        pod.running = pod.ready = False
        self.pods.pop(pod.name, None)

    def _pod_lifecycle(self, pod: Pod, now: float) -> None:
        node = self.nodes[pod.node]
        if not node.ready:
            if pod.ready:
                pod.ready = False
            return
        if not pod.running:
            self._try_start(pod, now)
            return
        if pod.memory_bytes > self.limit_bytes(pod):
            self.terminate(pod, "OOMKilled", 137, now)
            return
        self._probe(pod, now)

    def _try_start(self, pod: Pod, now: float) -> None:
        if pod.backoff_until is not None and now < pod.backoff_until:
            return
        if pod.started_at is None and now < pod.created_at + CREATE_DELAY:
            return
        if not self.runtime.image_exists(pod.template.image):
            first = pod.waiting_reason != "ImagePullBackOff" and pod.waiting_reason != "ErrImagePull"
            pod.waiting_reason = "ErrImagePull" if first else "ImagePullBackOff"
            self.events.add(now, "Warning", "Failed", "Pod", pod.name,
                            f'Failed to pull image "{pod.template.image}": rpc error: code = NotFound desc = failed to pull and unpack image "{pod.template.image}": not found')
            return
        env = dict(pod.template.env)
        for var, (secret, key) in pod.template.secret_env.items():
            if key not in self.secrets.get(secret, {}):
                pod.waiting_reason = "CreateContainerConfigError"
                self.events.add(now, "Warning", "Failed", "Pod", pod.name,
                                f'Error: couldn\'t find key {key} in Secret {self.namespace}/{secret}')
                return
            env[var] = self.secrets[secret][key]
        pod.env = env
        pod.listen_port = _listen_port(env, self.deployments[pod.deployment].port)
        restarted = pod.started_at is not None
        if restarted:
            pod.restart_count += 1
        pod.started_at = now
        pod.running = True
        pod.phase = "Running"
        pod.waiting_reason = None
        pod.ready = False
        pod.liveness_failures = pod.readiness_failures = 0
        pod.memory_bytes = 0.0
        self.events.add(now, "Normal", "Started", "Pod", pod.name, f"Started container {pod.deployment}")
        try:
            self.runtime.start(pod)
        except ContainerCrash as crash:
            self.terminate(pod, "Error", 1, now, detail=str(crash))

    def terminate(self, pod: Pod, reason: str, exit_code: int, now: float, detail: str = "") -> None:
        """The container exited; kubelet restarts it after the CrashLoopBackOff delay."""
        if pod.started_at is not None and now - pod.started_at >= BACKOFF_RESET_AFTER:
            pod.backoff_seconds = 0.0
        pod.backoff_seconds = BACKOFF_START if pod.backoff_seconds == 0 else min(BACKOFF_MAX, pod.backoff_seconds * 2)
        pod.backoff_until = now + pod.backoff_seconds
        pod.running = pod.ready = False
        pod.waiting_reason = "CrashLoopBackOff"
        pod.last_termination = {"reason": reason, "exitCode": exit_code, "t": now, "detail": detail}
        if pod.instance is not None:
            self.runtime.stop(pod)
        pod.instance = None
        pod.memory_bytes = 0.0
        if reason == "OOMKilled":
            self.events.add(now, "Warning", "OOMKilling", "Pod", pod.name,
                            f"Memory cgroup out of memory: Killed process ({pod.deployment}) in container {pod.deployment}")
        self.events.add(now, "Warning", "BackOff", "Pod", pod.name,
                        f"Back-off restarting failed container {pod.deployment} in pod {pod.name}_{self.namespace}")

    def _probe(self, pod: Pod, now: float) -> None:
        probes = pod.template.probes
        up = now - (pod.started_at or now)
        liveness = probes.get("liveness")
        if liveness and up >= liveness.get("initialDelaySeconds", 0) and not self._probe_passes(pod, liveness):
            pod.liveness_failures += 1
            period = liveness.get("periodSeconds", 10)
            if pod.liveness_failures * 5.0 >= period * liveness.get("failureThreshold", 3):
                self.events.add(now, "Normal", "Killing", "Pod", pod.name,
                                f"Container {pod.deployment} failed liveness probe, will be restarted")
                self.terminate(pod, "Error", 143, now, detail="liveness probe failed")
                return
            self.events.add(now, "Warning", "Unhealthy", "Pod", pod.name,
                            f"Liveness probe failed: {self._probe_error(pod, liveness)}")
        readiness = probes.get("readiness")
        warmed = up >= max(pod.start_delay, (readiness or {}).get("initialDelaySeconds", 0))
        if not warmed:
            return
        if readiness is None or self._probe_passes(pod, readiness):
            if not pod.ready:
                pod.ready = True
                pod.ready_at = now
            pod.readiness_failures = 0
            return
        pod.readiness_failures += 1
        if pod.ready and pod.readiness_failures * 5.0 >= readiness.get("periodSeconds", 10) * readiness.get("failureThreshold", 3):
            pod.ready = False
        if not pod.ready:
            self.events.add(now, "Warning", "Unhealthy", "Pod", pod.name,
                            f"Readiness probe failed: {self._probe_error(pod, readiness)}")

    def _probe_passes(self, pod: Pod, probe: Mapping[str, Any]) -> bool:
        if pod.deployment in self.down_listeners:
            return False
        if probe.get("port") != pod.listen_port:
            return False
        if probe.get("type") == "http":
            paths = self.spec.deployments[pod.deployment].health_paths
            return probe.get("path", "/") in paths
        return True

    def _probe_error(self, pod: Pod, probe: Mapping[str, Any]) -> str:
        port = probe.get("port")
        if probe.get("type") == "http" and port == pod.listen_port and pod.deployment not in self.down_listeners:
            return 'HTTP probe failed with statuscode: 404'
        if probe.get("type") == "grpc":
            return f'timeout: failed to connect service "{pod.ip}:{port}" within 1s: context deadline exceeded'
        if probe.get("type") == "http":
            return f'Get "http://{pod.ip}:{port}{probe.get("path", "/")}": dial tcp {pod.ip}:{port}: connect: connection refused'
        return f"dial tcp {pod.ip}:{port}: connect: connection refused"

    def _progress(self, dep: Deployment, now: float) -> None:
        if dep.rollout_complete_at is not None:
            return
        current = dep.current_rs()
        pods = self.pods_of(dep.name)
        ready_current = [p for p in pods if p.replica_set == current.name and p.ready]
        others = [p for p in pods if p.replica_set != current.name]
        if current.replicas == dep.replicas and len(ready_current) >= dep.replicas and not others:
            dep.rollout_complete_at = now
            dep.progressing_reason = "NewReplicaSetAvailable"
            dep.progress_since = now
            return
        newest_ready = max((p.ready_at or -1e18 for p in ready_current), default=-1e18)
        if newest_ready > dep.progress_since:
            dep.progress_since = newest_ready
        if now - dep.progress_since > dep.progress_deadline_seconds and dep.progressing_reason != "ProgressDeadlineExceeded":
            dep.progressing_reason = "ProgressDeadlineExceeded"
            self.events.add(now, "Warning", "ProgressDeadlineExceeded", "Deployment", dep.name,
                            f'Deployment "{dep.name}" has timed out progressing.')

    # --- nodes -----------------------------------------------------------------------------------
    def set_node_ready(self, name: str, ready: bool, now: float) -> None:
        node = self.nodes[name]
        node.ready = ready
        node.not_ready_since = None if ready else now
        self.events.add(now, "Normal" if ready else "Warning", "NodeReady" if ready else "NodeNotReady",
                        "Node", name, f"Node {name} status is now: {'NodeReady' if ready else 'NodeNotReady'}")

    def rollout_restart(self, name: str, now: float) -> ReplicaSet:
        """`kubectl rollout restart`: the same template stamped with the time, so a new revision
        replaces every pod while keeping the current revision's change-cause."""
        dep = self.deployments[name]
        template = dep.template.copy()
        template.restarted_at = timestamp(now) or ""
        return self.change_template(name, template, dep.current_rs().change_cause, now)


def _listen_port(env: Mapping[str, str], default: int) -> int:
    """Services listen on $PORT when set (as the upstream services do), else their built-in port."""
    try:
        return int(env.get("PORT", default))
    except ValueError:
        return -1
