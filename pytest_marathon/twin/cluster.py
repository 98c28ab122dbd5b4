"""The control plane of the twin: deployments, rollouts, pods, probes, crashes, nodes.

It reproduces the Kubernetes behaviours that faults and repairs depend on: a RollingUpdate that
keeps the old pod serving while a new one is not ready (and stalls until the progress deadline),
`rollout undo` as a new revision with the old template, container restarts with CrashLoopBackOff
back-off (first restart at once, then 10 s doubling to 300 s, reset after 10 min of running),
image pulls with their own back-off, OOMKilled when the working set passes the limit, probes that
fail when their port or path is wrong, graceful pod deletion, a node that stops reporting turning
Ready=Unknown after the node-monitor grace period and its pods evicted 300 s later, and
revisionHistoryLimit pruning. Event reasons and messages are the upstream ones; docs/fidelity.md
maps each behaviour to its upstream source.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from pytest_marathon.determinism import rng_for
from pytest_marathon.twin import envvars, programs
from pytest_marathon.twin.appspec import AppSpec
from pytest_marathon.twin.events import EventLog
from pytest_marathon.twin.objects import (
    Deployment,
    Node,
    Pod,
    PodTemplate,
    ReplicaSet,
    node_labels,
    pod_uid,
    resolve_fraction,
    timestamp,
)
from pytest_marathon.twin.quantities import parse_cpu, parse_memory

# Limits are read on every request and every tick, and a template holds a handful of strings.
_cores = functools.lru_cache(maxsize=4096, typed=True)(parse_cpu)
_bytes = functools.lru_cache(maxsize=4096, typed=True)(parse_memory)

POD_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
# kubelet crash-loop and image-pull back-off: flowcontrol.NewBackOff(10s, MaxContainerBackOff=300s)
# (pkg/kubelet/kubelet.go); an entry idle for 2 x max (600 s) expires, so the next crash restarts
# at once (staging/src/k8s.io/client-go/util/flowcontrol/backoff.go).
BACKOFF_START = 10.0
BACKOFF_MAX = 300.0
BACKOFF_RESET_AFTER = 2 * BACKOFF_MAX
# kube-controller-manager --node-monitor-grace-period (40 s; 50 s from v1.32): a node that stops
# reporting is marked Ready=Unknown, its pods NotReady, and tainted unreachable
# (pkg/controller/nodelifecycle/node_lifecycle_controller.go).
NODE_MONITOR_GRACE = 40.0
# the unreachable:NoExecute toleration the DefaultTolerationSeconds admission plugin adds (300 s)
EVICTION_AFTER = 300.0
CREATE_DELAY = 2.0
# pod.spec.terminationGracePeriodSeconds default (pkg/apis/core/v1/defaults.go)
DEFAULT_GRACE_SECONDS = 30
# The twin's registry pulls at this rate; an image's size follows from its name.
PULL_BYTES_PER_SECOND = 40e6


class ContainerCrash(Exception):  # noqa: N818 - a container's crash, not an error of the twin
    """The container process exited while starting (main() panicked, raised or exited); the
    exit code is the runtime's (a Go panic exits 2, log.Fatalf and an uncaught error 1)."""

    def __init__(self, detail: str, exit_code: int = 1) -> None:
        super().__init__(detail)
        self.exit_code = exit_code


class ContainerRuntime(Protocol):
    def image_exists(self, image: str) -> bool: ...

    def start(self, pod: Pod) -> None:
        """Start the container's process (sets `pod.instance`); raise ContainerCrash on failure."""

    def stop(self, pod: Pod) -> None: ...

    def reachable(self, pod: Pod, addr: str) -> bool:
        """Whether a TCP connect from `pod` to `host:port` succeeds now."""


class Cluster:
    def __init__(self, spec: AppSpec, seed: int, events: EventLog, runtime: ContainerRuntime,
                 now: float = 0.0) -> None:
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
        # pods no node may take (a nodeSelector no node's labels match): Pending without a node,
        # kept apart from `pods` because nothing runs them; name -> (pod, the scheduler's message)
        self.unscheduled: dict[str, tuple[Pod, str]] = {}
        # each deployment's pods sorted by name (rebuilt when one is added or removed): a
        # Service's endpoints are looked up on every call between services
        self._by_name: dict[str, list[Pod]] = {}
        # each deployment's pods in creation order (the order of `pods`), and every pod sorted by
        # name, rebuilt on the same changes: the controllers read them every tick, and a scan of
        # all pods per deployment or ReplicaSet grows with the square of the app's size
        self._by_deployment: dict[str, list[Pod]] = {}
        self._sorted: list[Pod] | None = None
        self.down_listeners: set[str] = set()
        # Other controllers acting on the cluster each reconcile, before it (a chaos schedule
        # that keeps killing pods while it lasts).
        self.controllers: list[Callable[[float], None]] = []
        # (network delay on the pod's own traffic, run-queue wait) in ms, as the kubelet's probe
        # meets them; the twin's engine wires chaos and CPU throttling in
        self.probe_delays: Callable[[Pod], tuple[float, float]] = lambda pod: (0.0, 0.0)
        self.probe_loss: Callable[[Pod], float] = lambda pod: 0.0
        self._probe_rng = rng_for(seed, "cluster", "probe-loss")
        self._timed_out: dict[str, bool] = {}  # the last probe of each pod ran out of time
        self._name_rng = rng_for(seed, "cluster", "pod-names")
        self._start_rng = rng_for(seed, "cluster", "pod-start")
        self._ip_counter = 10
        for name, dep in spec.deployments.items():
            deployment = Deployment(name=name, port=dep.port, template=PodTemplate.of(dep), replicas=dep.replicas)
            self.deployments[name] = deployment
            # the manifests are applied when the cluster starts: the first ReplicaSets date from then
            self._new_revision(deployment, "", now)

    # --- queries ------------------------------------------------------------------------------
    def pods_of(self, deployment: str) -> list[Pod]:
        """The deployment's active pods (a terminating pod is no longer counted, as the
        ReplicaSet controller's FilterActivePods)."""
        return [p for p in self._created(deployment) if not p.terminating]

    def ready_pods(self, deployment: str) -> list[Pod]:
        return [p for p in self._created(deployment) if p.ready]

    def _created(self, deployment: str) -> list[Pod]:
        """The deployment's pods, terminating ones too, in creation order (do not change the list)."""
        pods = self._by_deployment.get(deployment)
        if pods is None:
            pods = self._by_deployment[deployment] = [
                p for p in self.pods.values() if p.deployment == deployment]
        return pods

    def pods_by_name(self, deployment: str) -> list[Pod]:
        """The deployment's pods, terminating ones too, sorted by name (do not change the list)."""
        pods = self._by_name.get(deployment)
        if pods is None:
            pods = self._by_name[deployment] = sorted(
                (p for p in self.pods.values() if p.deployment == deployment), key=lambda p: p.name)
        return pods

    def _forget(self, pod: Pod) -> None:
        self.pods.pop(pod.name, None)
        self._changed(pod)

    def _changed(self, pod: Pod) -> None:
        """A pod was added or removed: the indexes holding it are rebuilt when next read."""
        self._by_name.pop(pod.deployment, None)
        self._by_deployment.pop(pod.deployment, None)
        self._sorted = None

    def _all_by_name(self) -> list[Pod]:
        """Every pod sorted by name (do not change the list)."""
        if self._sorted is None:
            self._sorted = sorted(self.pods.values(), key=lambda p: p.name)
        return self._sorted

    def limit_bytes(self, pod: Pod) -> int:
        return _bytes(pod.template.resources["limits"]["memory"])

    def limit_cores(self, pod: Pod) -> float:
        """The CPU a container gets per CFS period. The kubelet never writes a quota below 1 ms per
        100 ms period (MinQuotaPeriod in MilliCPUToQuota, pkg/kubelet/cm/helpers_linux.go), so a
        limit under 10m behaves as 10m."""
        cpu = pod.template.resources["limits"].get("cpu")
        if cpu is None:  # no CPU limit: the container may use the whole node
            return self.nodes[pod.node].cpu
        return max(_cores(cpu), 0.01)

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
        else:
            # `rollout undo` to a template that exists: that ReplicaSet takes the next revision
            rs.revision = next_revision
            rs.change_cause = change_cause or rs.change_cause
        dep.rollout_complete_at = None
        dep.progress_since = now
        dep.progressing_reason = "ReplicaSetUpdated"
        return rs

    def scale(self, name: str, replicas: int, now: float) -> None:
        """`kubectl scale`: the deployment controller resizes the ReplicaSet on its next sync."""
        dep = self.deployments[name]
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
        self._retry_unscheduled(now)
        for dep in self.deployments.values():
            self._rollout(dep, now)
        for pod in self._all_by_name():
            self._pod_lifecycle(pod, now)
        for dep in self.deployments.values():
            self._progress(dep, now)

    def _node_lifecycle(self, node: Node, now: float) -> None:
        """The node lifecycle controller: a node silent for the grace period turns Ready=Unknown
        (its pods NotReady, so Services drop them); 300 s after the unreachable taint its pods are
        evicted, and stay Terminating until the kubelet comes back to stop them."""
        if node.ready or node.not_ready_since is None:
            return
        if node.condition_ready and now - node.not_ready_since >= NODE_MONITOR_GRACE:
            node.condition_ready = False
            node.unreachable_since = now
            self.events.add(now, "Normal", "NodeNotReady", "Node", node.name,
                            f"Node {node.name} status is now: NodeNotReady")
            for pod in self._pods_on(node.name):
                pod.ready = False
        if node.condition_ready or now - node.unreachable_since < EVICTION_AFTER:
            return
        for pod in self._pods_on(node.name):
            if pod.terminating:
                continue
            self.events.add(now, "Normal", "TaintManagerEviction", "Pod", pod.name,
                            f"Marking for deletion Pod {self.namespace}/{pod.name}")
            self.delete_pod(pod, now)

    def _pods_on(self, node: str) -> list[Pod]:
        return sorted((p for p in self.pods.values() if p.node == node), key=lambda p: p.name)

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
        # reconcileNewReplicaSet (pkg/controller/deployment/rolling.go, NewRSNewReplicas)
        total = sum(rs.replicas for rs in dep.replica_sets)
        if current.replicas > desired:
            self._scale_rs(dep, current, desired, now)
        elif current.replicas < desired:
            room = desired + surge - total
            self._scale_rs(dep, current, current.replicas + max(0, min(desired - current.replicas, room)), now)
        # reconcileOldReplicaSets: at most allPods - minAvailable - newRSUnavailable may go, the
        # unhealthy old replicas first (cleanupUnhealthyReplicas), then available ones oldest first
        pods = self.pods_of(dep.name)
        min_available = desired - unavailable
        current_ready = sum(1 for p in pods if p.replica_set == current.name and p.ready)
        max_scaled_down = (sum(rs.replicas for rs in dep.replica_sets) - min_available
                           - max(0, current.replicas - current_ready))
        if max_scaled_down > 0:
            for rs in sorted(old, key=lambda r: (r.created_at, r.revision)):
                unhealthy = sum(1 for p in pods if p.replica_set == rs.name and not p.ready)
                unhealthy += sum(1 for p, _m in self.unscheduled.values() if p.replica_set == rs.name)
                take = min(rs.replicas, unhealthy, max_scaled_down)
                if take:
                    self._scale_rs(dep, rs, rs.replicas - take, now)
                    max_scaled_down -= take
            live = [rs for rs in old if rs.replicas > 0]
            ready = sum(1 for p in pods if p.ready and (p.replica_set == current.name
                                                         or any(p.replica_set == rs.name for rs in live)))
            removable = ready - min_available
            for rs in sorted(live, key=lambda r: (r.created_at, r.revision)):
                take = max(0, min(rs.replicas, removable))
                if take:
                    self._scale_rs(dep, rs, rs.replicas - take, now)
                    removable -= take
        for rs in dep.replica_sets:
            self._sync_pods(rs, now)

    def _scale_rs(self, dep: Deployment, rs: ReplicaSet, replicas: int, now: float) -> None:
        """scaleReplicaSet (pkg/controller/deployment/sync.go): every size change is an event."""
        if replicas == rs.replicas:
            return
        direction = "up" if replicas > rs.replicas else "down"
        self.events.add(now, "Normal", "ScalingReplicaSet", "Deployment", dep.name,
                        f"Scaled {direction} replica set {rs.name} from {rs.replicas} to {replicas}")
        rs.replicas = replicas

    def _recreate(self, dep: Deployment, current: ReplicaSet, old: list[ReplicaSet], now: float) -> None:
        """Recreate: every old pod goes before any new one starts, so two versions never serve
        at once (and nothing serves while the new version cannot start)."""
        for rs in sorted(old, key=lambda r: r.revision):
            self._scale_rs(dep, rs, 0, now)
            self._sync_pods(rs, now)
        # recreate.go waits until no old pod is running, terminating ones included
        if any(p.replica_set != current.name for p in self._created(dep.name)):
            return
        self._scale_rs(dep, current, dep.replicas, now)
        self._sync_pods(current, now)

    def _sync_pods(self, rs: ReplicaSet, now: float) -> None:
        """The ReplicaSet controller (pkg/controller/replicaset/replica_set.go manageReplicas):
        active pods only; SuccessfulCreate/SuccessfulDelete come from RealPodControl
        (pkg/controller/controller_utils.go)."""
        mine = [p for p in self._created(rs.deployment) if p.replica_set == rs.name and not p.terminating]
        waiting = sorted(n for n, (p, _m) in self.unscheduled.items() if p.replica_set == rs.name)
        while waiting and len(mine) + len(waiting) > rs.replicas:
            # unassigned pods go first (controller_utils.go ActivePods ordering); no kubelet
            # holds them, so they are gone at once
            name = waiting.pop()
            del self.unscheduled[name]
            self.events.add(now, "Normal", "SuccessfulDelete", "ReplicaSet", rs.name, f"Deleted pod: {name}")
        wanted = rs.replicas - len(waiting)
        if len(mine) > wanted:
            mine.sort(key=lambda p: (p.ready, -p.created_at, p.name))
            for pod in mine[: len(mine) - wanted]:
                self.delete_pod(pod, now)
                self.events.add(now, "Normal", "SuccessfulDelete", "ReplicaSet", rs.name, f"Deleted pod: {pod.name}")
        for _ in range(wanted - len(mine)):
            self._create_pod(rs, now)

    def _create_pod(self, rs: ReplicaSet, now: float) -> None:
        node = self._schedule(rs.template, rs.deployment)
        suffix = "".join(self._name_rng.choice(POD_NAME_ALPHABET) for _ in range(5))
        name = f"{rs.name}-{suffix}"
        if node is None and rs.template.node_selector and not self._selectable(rs.template):
            pod = self._new_pod(name, rs, "", now)
            message = self._affinity_message()
            self.unscheduled[name] = (pod, message)
            self.events.add(now, "Normal", "SuccessfulCreate", "ReplicaSet", rs.name, f"Created pod: {name}")
            self.events.add(now, "Warning", "FailedScheduling", "Pod", name, message)
            return
        if node is None:
            self.events.add(now, "Warning", "FailedScheduling", "Pod", name,
                            "0/4 nodes are available: node(s) had untolerated taint or insufficient cpu.")
            return
        self._bind(self._new_pod(name, rs, node.name, now), node, now, created=True)

    def _new_pod(self, name: str, rs: ReplicaSet, node: str, now: float) -> Pod:
        return Pod(
            name=name,
            deployment=rs.deployment,
            replica_set=rs.name,
            template=rs.template.copy(),
            node=node,
            created_at=now,
            start_delay=self._start_rng.uniform(*self.spec.deployments[rs.deployment].start_seconds),
            grace_seconds=self.spec.deployments[rs.deployment].termination_grace_seconds,
        )

    def _bind(self, pod: Pod, node: Node, now: float, created: bool) -> None:
        self._ip_counter += 1
        pod.node = node.name
        pod.ip = f"10.8.{list(self.nodes).index(node.name)}.{self._ip_counter % 250 + 2}"
        self.pods[pod.name] = pod
        self._changed(pod)
        if created:
            self.events.add(now, "Normal", "SuccessfulCreate", "ReplicaSet", pod.replica_set, f"Created pod: {pod.name}")
        self.events.add(now, "Normal", "Scheduled", "Pod", pod.name,
                        f"Successfully assigned {self.namespace}/{pod.name} to {node.name}")

    def _selectable(self, template: PodTemplate) -> bool:
        """Whether some node carries every label of the template's nodeSelector (the NodeAffinity
        filter plugin, pkg/scheduler/framework/plugins/nodeaffinity)."""
        wanted = template.node_selector.items()
        return any(all(node_labels(n).get(k) == v for k, v in wanted) for n in self.nodes.values())

    def _affinity_message(self) -> str:
        """The FitError every node filtered out by NodeAffinity gives (pkg/scheduler/framework/
        types.go FitError.Error with nodeaffinity's ErrReasonPod), and default preemption's
        PostFilter message: such a node is UnschedulableAndUnresolvable, so preemption cannot help."""
        n = len(self.nodes)
        return (f"0/{n} nodes are available: {n} node(s) didn't match Pod's node affinity/selector. "
                f"preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling.")

    def _retry_unscheduled(self, now: float) -> None:
        """The scheduler retries an unschedulable pod when the cluster changes; a pod a node now
        matches is bound there and starts."""
        for name in sorted(self.unscheduled):
            pod, _message = self.unscheduled[name]
            if not self._selectable(pod.template):
                continue
            node = self._schedule(pod.template, pod.deployment)
            if node is not None:
                del self.unscheduled[name]
                self._bind(pod, node, now, created=False)

    def _schedule(self, template: PodTemplate, deployment: str = "") -> Node | None:
        """The least-requested node with room. With zone spreading (`zones.spread`: every
        Deployment carries a topologySpreadConstraint on topology.kubernetes.io/zone, maxSkew 1,
        ScheduleAnyway) a zone holding fewer of the deployment's pods is preferred first."""
        want = cpu_request(template)
        spread = self.spec.zones.spread and deployment
        per_zone: dict[str, int] = {}
        if spread:
            for p in self.pods.values():
                if p.deployment == deployment and not p.terminating:
                    zone = self.nodes[p.node].zone
                    per_zone[zone] = per_zone.get(zone, 0) + 1
        best: tuple[int, float, int, str] | None = None
        wanted = template.node_selector.items()
        for node in self.nodes.values():
            if not node.condition_ready:
                continue
            if wanted and any(node_labels(node).get(k) != v for k, v in wanted):
                continue
            used = sum(cpu_request(p.template) for p in self.pods.values() if p.node == node.name)
            if used + want > node.cpu:
                continue
            # pods already there break ties (the scheduler's balanced allocation; the demo's pods
            # request no CPU, so requests alone would stack them on the first node)
            crowd = sum(1 for p in self.pods.values() if p.node == node.name) if spread else 0
            key = (per_zone.get(node.zone, 0) if spread else 0, used, crowd, node.name)
            if best is None or key < best:
                best = key
        return self.nodes[best[3]] if best else None

    def delete_pod(self, pod: Pod, now: float, grace_seconds: int | None = None) -> None:
        """Graceful deletion: the pod leaves its Service at once and its ReplicaSet stops counting
        it; the kubelet sends SIGTERM ("Killing" event) and the pod object goes when the container
        has exited, at most terminationGracePeriodSeconds later. None of the app's services delays
        SIGTERM, so that is the kubelet's next sync; on an unreachable node the pod stays
        Terminating until its kubelet returns."""
        if pod.terminating:
            return
        if grace_seconds == 0:
            # a forced deletion (--grace-period=0 --force, PodChaos pod-kill): gone at once
            self._stop_container(pod)
            self._forget(pod)
            return
        pod.deleted_at = now
        pod.ready = False
        if self.nodes[pod.node].ready:
            self.events.add(now, "Normal", "Killing", "Pod", pod.name,
                            f"Stopping container {pod.template.container}")
            self._stop_container(pod)

    def _stop_container(self, pod: Pod) -> None:
        if pod.instance is not None:
            self.runtime.stop(pod)
        pod.instance = None
        pod.running = pod.ready = False

    def _finish_deletion(self, pod: Pod, now: float) -> None:
        node = self.nodes[pod.node]
        if not node.ready or now <= pod.deleted_at:
            return
        if pod.running or pod.instance is not None:
            self.events.add(now, "Normal", "Killing", "Pod", pod.name,
                            f"Stopping container {pod.template.container}")
            self._stop_container(pod)
            return
        self._forget(pod)

    def _pod_lifecycle(self, pod: Pod, now: float) -> None:
        if pod.terminating:
            self._finish_deletion(pod, now)
            return
        node = self.nodes[pod.node]
        if not node.ready:
            # the kubelet is gone: nothing runs or reports until the node controller notices
            if not node.condition_ready:
                pod.ready = False
            return
        if not pod.running:
            self._try_start(pod, now)
            return
        if pod.memory_bytes > self.limit_bytes(pod):
            self.terminate(pod, "OOMKilled", 137, now)
            self._restart_unless_backing_off(pod, now)
            return
        self._probe(pod, now)

    def _try_start(self, pod: Pod, now: float) -> None:
        """One kubelet sync of a pod whose container is not running (SyncPod in
        pkg/kubelet/kuberuntime/kuberuntime_manager.go): crash-loop back-off first (doBackOff),
        then the image (EnsureImageExists, pkg/kubelet/images/image_manager.go), then create and
        start (startContainer, kuberuntime_container.go). Reasons: pkg/kubelet/events/event.go."""
        if pod.started_at is None and now < pod.created_at + CREATE_DELAY:
            return
        container = pod.template.container
        if pod.backoff_until is not None and now < pod.backoff_until:
            pod.waiting_reason = "CrashLoopBackOff"
            self.events.add(now, "Warning", "BackOff", "Pod", pod.name,
                            f"Back-off restarting failed container {container} in pod {_pod_desc(pod, self.namespace)}")
            return
        if not self._ensure_image(pod, now):
            return
        raw = dict(pod.template.env)
        for var, (secret, key) in pod.template.secret_env.items():
            if key not in self.secrets.get(secret, {}):
                pod.waiting_reason = "CreateContainerConfigError"
                self.events.add(now, "Warning", "Failed", "Pod", pod.name,
                                f'Error: couldn\'t find key {key} in Secret {self.namespace}/{secret}')
                return
            raw[var] = self.secrets[secret][key]
        # entries in list order, literals expanding `$(VAR)` of earlier ones (twin/envvars.py)
        env = envvars.resolve(pod.template.env_names(), raw, set(pod.template.env))
        pod.env = env
        pod.args = tuple(envvars.expand(arg, env) for arg in pod.template.args)
        program = programs.program_of(self.spec, pod.deployment, pod.template.command)
        if program == pod.deployment:
            pod.listen_port = _listen_port(env, self.deployments[pod.deployment].port,
                                           self.spec.deployments[pod.deployment].port_env)
        else:
            # another service's binary listens where that service's config says: hotelReservation's
            # programs read `<Svc>Port` from the image's one config.json (cmd/geo/main.go: GeoPort)
            pod.listen_port = _listen_port(env, self.spec.deployments[program].port,
                                           self.spec.deployments[program].port_env)
        restarted = pod.started_at is not None
        waits = self.spec.deployments[pod.deployment].init_wait
        if not restarted and waits and not all(self.runtime.reachable(pod, addr) for addr in waits):
            # the init container loops until the address answers; the app container waits
            pod.waiting_reason = "PodInitializing"
            return
        if restarted:
            pod.restart_count += 1
            self._next_backoff(pod)
        pod.started_at = now
        pod.running = True
        pod.phase = "Running"
        pod.waiting_reason = None
        pod.ready = False
        pod.liveness_failures = pod.readiness_failures = 0
        pod.memory_bytes = 0.0
        self.events.add(now, "Normal", "Created", "Pod", pod.name, f"Created container {container}")
        self.events.add(now, "Normal", "Started", "Pod", pod.name, f"Started container {container}")
        try:
            self.runtime.start(pod)
        except ContainerCrash as crash:
            self.terminate(pod, "Error", crash.exit_code, now, detail=str(crash))
            self._restart_unless_backing_off(pod, now)

    def _restart_unless_backing_off(self, pod: Pod, now: float) -> None:
        """A container's exit wakes the kubelet (PLEG) at once: with no back-off entry yet the
        restart happens in the same sync, else the sync reports CrashLoopBackOff. A restart sets
        the entry, so this recurses at most once."""
        if not pod.terminating and self.nodes[pod.node].ready:
            self._try_start(pod, now)

    def _ensure_image(self, pod: Pod, now: float) -> bool:
        """EnsureImageExists with IfNotPresent: an image already on the node is not pulled again; a
        failed pull is ErrImagePull and starts the image back-off (10 s doubling to 300 s), during
        which each sync reports ImagePullBackOff instead of pulling."""
        image = pod.template.image
        node = self.nodes[pod.node]
        if image in node.images:
            self.events.add(now, "Normal", "Pulled", "Pod", pod.name,
                            f'Container image "{image}" already present on machine')
            return True
        if pod.pull_backoff_until is not None and now < pod.pull_backoff_until:
            pod.waiting_reason = "ImagePullBackOff"
            self.events.add(now, "Normal", "BackOff", "Pod", pod.name, f'Back-off pulling image "{image}"')
            self.events.add(now, "Warning", "Failed", "Pod", pod.name, "Error: ImagePullBackOff")
            return False
        self.events.add(now, "Normal", "Pulling", "Pod", pod.name, f'Pulling image "{image}"')
        if not self.runtime.image_exists(image):
            pod.waiting_reason = "ErrImagePull"
            self.events.add(now, "Warning", "Failed", "Pod", pod.name,
                            f'Failed to pull image "{image}": {_pull_error(image)}')
            self.events.add(now, "Warning", "Failed", "Pod", pod.name, "Error: ErrImagePull")
            pod.pull_backoff_seconds = BACKOFF_START if pod.pull_backoff_seconds == 0 else min(
                BACKOFF_MAX, pod.pull_backoff_seconds * 2)
            pod.pull_backoff_until = now + pod.pull_backoff_seconds
            return False
        size = _image_size(image)
        took = f"{size / PULL_BYTES_PER_SECOND:.3f}".rstrip("0").rstrip(".") + "s"
        self.events.add(now, "Normal", "Pulled", "Pod", pod.name,
                        f'Successfully pulled image "{image}" in {took} ({took} including waiting). '
                        f"Image size: {size} bytes.")
        node.images.add(image)
        pod.pull_backoff_seconds = 0.0
        pod.pull_backoff_until = None
        return True

    def _next_backoff(self, pod: Pod) -> None:
        """flowcontrol.Backoff.Next at a restart: 10 s the first time (or after the entry expired),
        then doubling up to 300 s."""
        finished = pod.last_termination["t"] if pod.last_termination else 0.0
        expired = pod.backoff_updated_at is None or finished - pod.backoff_updated_at > BACKOFF_RESET_AFTER
        pod.backoff_seconds = BACKOFF_START if expired else min(BACKOFF_MAX, pod.backoff_seconds * 2)
        pod.backoff_updated_at = finished

    def terminate(self, pod: Pod, reason: str, exit_code: int, now: float, detail: str = "") -> None:
        """The container exited. The kubelet restarts it at its next sync unless the crash-loop
        back-off (keyed on the container, measured from its finish time) still runs: the first
        restart is immediate, later ones wait 10 s, 20 s, ... 300 s. OOMKilled shows only in the
        container status; the OOMKilling event is node-problem-detector's, which Kind lacks."""
        in_backoff = pod.backoff_updated_at is not None and now - pod.backoff_updated_at <= BACKOFF_RESET_AFTER
        pod.backoff_until = now + pod.backoff_seconds if in_backoff else None
        pod.running = pod.ready = False
        pod.waiting_reason = None
        pod.last_termination = {"reason": reason, "exitCode": exit_code, "t": now, "detail": detail}
        if pod.instance is not None:
            self.runtime.stop(pod)
        pod.instance = None
        pod.memory_bytes = 0.0

    def _probe(self, pod: Pod, now: float) -> None:
        probes = pod.template.probes
        up = now - (pod.started_at or now)
        liveness = probes.get("liveness")
        if liveness and up >= liveness.get("initialDelaySeconds", 0) and not self._probe_passes(pod, liveness):
            pod.liveness_failures += 1
            period = liveness.get("periodSeconds", 10)
            if pod.liveness_failures * 5.0 >= period * liveness.get("failureThreshold", 3):
                self.events.add(now, "Normal", "Killing", "Pod", pod.name,
                                f"Container {pod.template.container} failed liveness probe, will be restarted")
                self.terminate(pod, "Error", 143, now, detail="liveness probe failed")
                self._restart_unless_backing_off(pod, now)
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
        if pod.deployment in self.down_listeners or pod.name in self.down_listeners:
            return False
        if probe.get("port") != pod.listen_port:
            return False
        self._timed_out[pod.name] = self._probe_timed_out(pod, probe)
        if self._timed_out[pod.name]:
            return False
        if probe.get("type") == "http":
            paths = self.spec.deployments[pod.deployment].health_paths
            return probe.get("path", "/") in paths
        return True

    def _probe_timed_out(self, pod: Pod, probe: Mapping[str, Any]) -> bool:
        """The kubelet gives every probe `timeoutSeconds` (default 1 s, pkg/apis/core/v1/defaults.go);
        a pod whose own traffic is delayed, or whose handlers wait in a throttled run queue, answers
        too late and the probe fails (pkg/probe/grpc/grpc.go, pkg/probe/http/http.go)."""
        delay_ms, wait_ms = self.probe_delays(pod)
        timeout_ms = float(probe.get("timeoutSeconds", 1)) * 1000.0
        loss = self.probe_loss(pod)
        if loss > 0.0:
            # a probe is ~4 segments (handshake, request, answer); TCP resends a lost one after
            # 200 ms, then 400 ms more: three tries fit in a 1 s timeout
            tries = 1 + sum(1 for at in (200.0, 600.0, 1400.0, 3000.0) if at < timeout_ms)
            if self._probe_rng.random() >= (1.0 - loss ** tries) ** 4:
                return True
        return delay_ms + wait_ms >= timeout_ms

    def _probe_timeout_error(self, pod: Pod, probe: Mapping[str, Any]) -> str:
        port, timeout = probe.get("port"), f"{probe.get('timeoutSeconds', 1)}s"
        delay_ms, _wait = self.probe_delays(pod)
        if probe.get("type") == "grpc":
            if delay_ms >= float(probe.get("timeoutSeconds", 1)) * 1000.0:
                # the TCP handshake itself is late: the blocking dial runs out of time
                return f'timeout: failed to connect service "{pod.ip}:{port}" within {timeout}: context deadline exceeded'
            return f"timeout: health rpc did not complete within {timeout}"
        if probe.get("type") == "http":
            return (f'Get "http://{pod.ip}:{port}{probe.get("path", "/")}": context deadline exceeded '
                    "(Client.Timeout exceeded while awaiting headers)")
        return f"dial tcp {pod.ip}:{port}: i/o timeout"

    def _probe_error(self, pod: Pod, probe: Mapping[str, Any]) -> str:
        port = probe.get("port")
        if port == pod.listen_port and not {pod.deployment, pod.name} & self.down_listeners \
                and self._timed_out.get(pod.name, False):
            return self._probe_timeout_error(pod, probe)
        if probe.get("type") == "http" and port == pod.listen_port and not {pod.deployment, pod.name} & self.down_listeners:
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
            self._cleanup_history(dep)
            return
        newest_ready = max((p.ready_at or -1e18 for p in ready_current), default=-1e18)
        if newest_ready > dep.progress_since:
            dep.progress_since = newest_ready
        if now - dep.progress_since > dep.progress_deadline_seconds and dep.progressing_reason != "ProgressDeadlineExceeded":
            # only the Progressing condition turns False (pkg/controller/deployment/progress.go
            # syncRolloutStatus); the controller records no event for it
            dep.progressing_reason = "ProgressDeadlineExceeded"

    # --- nodes -----------------------------------------------------------------------------------
    def _cleanup_history(self, dep: Deployment) -> None:
        """cleanupDeployment (pkg/controller/deployment/sync.go), run once a rollout completes:
        old ReplicaSets beyond revisionHistoryLimit, oldest revision first, are deleted if idle."""
        current = dep.current_rs()
        old = sorted((rs for rs in dep.replica_sets if rs is not current), key=lambda r: r.revision)
        excess = len(old) - dep.revision_history_limit
        for rs in old[:max(0, excess)]:
            if rs.replicas == 0 and not any(p.replica_set == rs.name for p in self._created(dep.name)):
                dep.replica_sets.remove(rs)

    def set_node_ready(self, name: str, ready: bool, now: float) -> None:
        """The node's kubelet stops (or resumes) reporting. Going down is silent until the node
        lifecycle controller's grace period runs out; coming back, the kubelet posts Ready."""
        node = self.nodes[name]
        node.ready = ready
        node.not_ready_since = None if ready else now
        if ready:
            if not node.condition_ready:
                self.events.add(now, "Normal", "NodeReady", "Node", name, f"Node {name} status is now: NodeReady")
            node.condition_ready = True

    def kill_container(self, pod: Pod, now: float) -> None:
        """The container runtime SIGKILLs the container from outside (Chaos Mesh container-kill:
        chaos-daemon's ContainerKill, controllers/chaosimpl/podchaos/containerkill/impl.go): no
        Killing event (the kubelet did not do it), exit code 137 reason Error, and the kubelet
        restarts it as after any exit."""
        self.terminate(pod, "Error", 137, now, detail="container killed")
        self._restart_unless_backing_off(pod, now)

    def swap_image(self, pod: Pod, image: str, now: float, exit_code: int) -> None:
        """A patch of one pod's container image (Chaos Mesh pod-failure patches `spec.containers
        [].image`, controllers/chaosimpl/podchaos/podfailure/impl.go). The kubelet sees the
        container's spec hash change, kills it ("Container <name> definition changed, will be
        restarted": computePodActions, pkg/kubelet/kuberuntime/kuberuntime_manager.go) and starts
        the new image: a restart counted. `exit_code` is how the old process ends on SIGTERM."""
        template = pod.template.copy()
        template.image = image
        pod.template = template
        if not pod.running:
            return  # a waiting container simply starts the new image at its next sync
        self.events.add(now, "Normal", "Killing", "Pod", pod.name,
                        f"Container {template.container} definition changed, will be restarted")
        self.terminate(pod, "Completed" if exit_code == 0 else "Error", exit_code, now, detail="definition changed")
        # the kubelet kills and starts in one sync; its back-off is keyed on the last *exited*
        # container's finish, not on this kill, so the new image starts at once
        pod.backoff_until = None
        self._restart_unless_backing_off(pod, now)

    def rollout_restart(self, name: str, now: float) -> ReplicaSet:
        """`kubectl rollout restart`: the same template stamped with the time, so a new revision
        replaces every pod while keeping the current revision's change-cause."""
        dep = self.deployments[name]
        template = dep.template.copy()
        template.restarted_at = timestamp(now) or ""
        return self.change_template(name, template, dep.current_rs().change_cause, now)


def _pod_desc(pod: Pod, namespace: str) -> str:
    """format.Pod (pkg/kubelet/util/format/pod.go): name_namespace(uid)."""
    return f"{pod.name}_{namespace}({pod_uid(pod.name, namespace)})"


def _image_size(image: str) -> int:
    """A plausible compressed image size, fixed by the image name (40-120 MB)."""
    return 40_000_000 + int(hashlib.sha256(image.encode()).hexdigest()[:8], 16) % 80_000_000


def _pull_error(image: str) -> str:
    """containerd's answer for a tag the registry does not have (the CRI error the kubelet prints)."""
    first, _, rest = image.partition("/")
    if not rest:
        ref = f"docker.io/library/{image}"
    elif "." in first or ":" in first or first == "localhost":
        ref = image
    else:
        ref = f"docker.io/{image}"
    return (f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": '
            f'failed to resolve reference "{ref}": {ref}: not found')


def _listen_port(env: Mapping[str, str], default: int, port_env: str = "PORT") -> int:
    """Services listen on the port their env names when it is set (`PORT` for Online Boutique,
    `CHECKOUT_PORT` and the like for the OpenTelemetry demo, or a URL such as ASP.NET Core's
    `ASPNETCORE_URLS=http://*:8080`), else on their built-in port."""
    value = env.get(port_env)
    if value is None:
        return default
    if "://" in value:
        value = value.rsplit(":", 1)[-1].strip("/")
    try:
        return int(value)
    except ValueError:
        return -1


def cpu_request(template: PodTemplate) -> float:
    """The container's CPU request; none set (only a memory limit, as the OpenTelemetry demo's
    chart writes) requests nothing."""
    cpu = template.resources["requests"].get("cpu")
    return parse_cpu(cpu) if cpu is not None else 0.0
