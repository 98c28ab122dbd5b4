"""`Twin`: the embedded backend — one application on a simulated Kubernetes, in virtual time.

Each 5 s tick: the control plane reconciles (rollouts, probes, crashes, evictions), the load
generator's requests for the tick run through the real service code, resource usage is settled
(CPU throttling, memory working set), the entry point's SLI is recorded, and every 15 s the
exporters are scraped. Nothing reads the wall clock; every draw comes from `rng_for(seed, ...)`.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import hashlib
import json
from bisect import bisect_left
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_marathon.backends.base import (
    ActionResult,
    BackendError,
    BuildResult,
    EnvValue,
    SliSample,
    resource_kind,
)
from pytest_marathon.determinism import rng_for
from pytest_marathon.tsdb import SeriesStore
from pytest_marathon.twin import addresses, images, probes, programs
from pytest_marathon.twin.appspec import PROBE_TYPES, load_app
from pytest_marathon.twin.chaos import PAUSE_IMAGE, Chaos
from pytest_marathon.twin.cluster import Cluster, ContainerCrash
from pytest_marathon.twin.consumers import (
    ConsumerState,
    run_consumers,
    start_data_server,
    start_memcached,
    start_mysql,
)
from pytest_marathon.twin.datastore import RedisServer
from pytest_marathon.twin.events import EventLog
from pytest_marathon.twin.kafka import Broker
from pytest_marathon.twin.langerrors import startup_failure
from pytest_marathon.twin.load import HTTP_STEP, LoadGenerator
from pytest_marathon.twin.memcache import MemcachedServer
from pytest_marathon.twin.mongostore import MongoData, MongoServer, load_init, start_server
from pytest_marathon.twin.mysqlstore import MySqlServer
from pytest_marathon.twin.objects import (
    Pod,
    configmap_k8s,
    deployment_k8s,
    node_k8s,
    pod_k8s,
    replicaset_k8s,
    service_k8s,
    unscheduled_pod_k8s,
)
from pytest_marathon.twin.patching import PatchError, apply_patch
from pytest_marathon.twin.pod_exec import ExecFailed, exec_in_pod
from pytest_marathon.twin.quantities import QuantityError, parse_cpu, parse_memory
from pytest_marathon.twin.redis_config import requirepass
from pytest_marathon.twin.runtime import CallContext, ContainerExit, NullSink, Runtime, _Trace
from pytest_marathon.twin.sandbox_errors import SandboxError
from pytest_marathon.twin.scrape import scrape_cluster
from pytest_marathon.twin.scrape_data import scrape_data_servers
from pytest_marathon.twin.sqlstore import PgServer
from pytest_marathon.twin.telemetry import Telemetry

TICK = 5.0
SCRAPE_EVERY = 15.0
WARMUP_START = -300.0
BOOT_SECONDS = 30.0
IDLE_CORES = 0.002
CFS_PERIOD = 0.1
MAX_REPLICAS = 20
DEFAULT_TASK_CAP = 24


class _Containers:
    """The container runtime the control plane drives: images, module instances, redis servers."""

    def __init__(self, twin: Twin) -> None:
        self.twin = twin

    def image_exists(self, image: str) -> bool:
        return self.twin.registry.exists(image)

    def reachable(self, pod: Pod, addr: str) -> bool:
        """Whether a TCP connect from `pod` to `addr` succeeds (an init container's `nc -z`)."""
        _peer, target, failure = self.twin.runtime.resolve(pod, addr)
        return failure is None and target is not None and target.running

    def start(self, pod: Pod) -> None:
        twin = self.twin
        dep = twin.spec.deployments[pod.deployment]
        if dep.kind == "datastore":
            # redis' default maxmemory is 0, no limit (redis.conf); the manifest may set one
            limit = dep.datastore.get("maxmemory")
            maxmemory = parse_memory(str(limit)) if limit is not None else 0
            password = requirepass(pod.args)  # `--requirepass` from the container's args
            twin.servers[pod.name] = twin.servers.get(pod.name) or RedisServer(password, maxmemory)
            twin.servers[pod.name].password = password
            return
        if dep.kind in ("kafka", "postgres", "flagd"):
            start_data_server(twin, pod, dep)
            return
        if dep.kind == "memcached":
            start_memcached(twin, pod)
            return
        if dep.kind == "mongodb":
            twin.start_mongo(pod, dep)
            return
        if dep.kind == "mysql":
            start_mysql(twin, pod, dep)
            return
        if pod.template.image == PAUSE_IMAGE:
            # Chaos Mesh pod-failure's stand-in: /pause sleeps and listens on nothing
            pod.listen_port = 0
            return
        program = programs.program_of(twin.spec, pod.deployment, pod.template.command)
        # a command naming another program of the shared image runs that service's build
        tag = pod.template.image if program == pod.deployment else twin.spec.deployments[program].image
        try:
            compiled = twin.registry.compiled(tag)
            pod.instance = compiled.instantiate(lambda: twin.startup_context(pod))
        except ContainerExit as exit_:  # log.Fatalf: the message is logged, then os.Exit
            raise ContainerCrash("exited", exit_.code) from None
        except SandboxError as exc:
            raise ContainerCrash(exc.reason) from None
        except Exception as exc:  # noqa: BLE001 - a crashing main() is an ordinary container failure
            # the process prints its crash to stderr in its runtime's words, then exits
            exit_code, lines = startup_failure(dep.language, exc)
            ctx = twin.startup_context(pod)
            for line in lines:
                ctx.log("error", line)
            raise ContainerCrash(lines[0].split("\n", 1)[0], exit_code) from None

    def stop(self, pod: Pod) -> None:
        pod.instance = None


class Twin:
    """The twin backend (see `pytest_marathon.backends.base.Backend`)."""

    tick_seconds = TICK

    def __init__(self, app: str = "boutique", seed: int = 0, users: int | None = None,
                 task_cap: int = DEFAULT_TASK_CAP, apps_dir: Path | None = None) -> None:
        self.spec = load_app(app, apps_dir)
        self.app = self.spec.app
        self.namespace = self.spec.namespace
        self.seed = int(seed)
        self.task_cap = int(task_cap)
        self.registry = images.ImageRegistry()
        for name, dep in self.spec.deployments.items():
            folder = self.spec.services_dir / name
            if dep.has_code and folder.is_dir():
                shared = {}
                for source in dep.shared_code:
                    shared.update(images.folder_files(self.spec.services_dir.parent / source))
                self.registry.push(dep.image, name, {**shared, **images.folder_files(folder)})
            elif not dep.has_code:
                self.registry.push_plain(dep.image)
            for tag, overlay in sorted(dep.extra_images.items()):
                # another build of the service's code (app.yaml `extra_images`): its files over the
                # service folder's, as a build of a patched working copy is
                self.registry.push(tag, name, {**self.registry.files(dep.image),
                                               **images.folder_files(self.spec.services_dir.parent / overlay)})
        self.registry.push_plain(PAUSE_IMAGE)
        self.event_log = EventLog(self.namespace)
        self.telemetry = Telemetry(self.namespace)
        self.servers: dict[str, RedisServer] = {}
        self.brokers: dict[str, Broker] = {}
        self.pg_servers: dict[str, PgServer] = {}
        self.memcached: dict[str, MemcachedServer] = {}
        self.mongo_servers: dict[str, MongoServer] = {}
        # a mongodb deployment's data directory on its volume (`datastore.volume: true`), which
        # outlives its pods; without a volume every container start begins from the init
        self.mongo_volumes: dict[str, MongoData] = {}
        self.mysql_servers: dict[str, MySqlServer] = {}
        # a mysql deployment's server on its volume (`datastore.volume: true`), kept across pods
        self.mysql_volumes: dict[str, MySqlServer] = {}
        self.consumers = ConsumerState()
        self.down_datastores: set[str] = set()
        # the app is deployed and Available before the load starts, as `deploy` waits for it
        boot = BOOT_SECONDS if self.spec.boot_seconds is None else self.spec.boot_seconds
        self.cluster = Cluster(self.spec, self.seed, self.event_log, _Containers(self),
                               now=WARMUP_START - boot)
        self.chaos = Chaos(self.cluster, self.servers, self.down_datastores)
        self.runtime = Runtime(self.spec, self.cluster, rng_for(self.seed, "latency"), self.chaos.edge_effect,
                               self.servers, self.down_datastores)
        self.runtime.brokers, self.runtime.pg_servers = self.brokers, self.pg_servers
        self.runtime.memcached = self.chaos.memcached = self.memcached
        self.runtime.mongo_servers = self.mongo_servers
        self.runtime.mysql_servers = self.chaos.mysql_servers = self.mysql_servers
        self.chaos.pg_servers = self.pg_servers
        self.chaos.mongo_servers = self.mongo_servers
        self.cluster.probe_delays = lambda pod: (self.chaos.pod_delay_ms(pod.deployment),
                                                 self.runtime.run_queue_wait_ms(pod))
        self.cluster.probe_loss = lambda pod: self.chaos.pod_loss(pod.deployment)
        n_users = self.spec.load.users if users is None else int(users)
        self.load = LoadGenerator(self.spec.load, self.seed, n_users, WARMUP_START)
        self.load.flag_value = self._load_generator_flag
        self._sample_rng = rng_for(self.seed, "sample")
        self._flags_by_image: dict[str, frozenset[str]] = {}
        self._request_counter = 0
        self._now = WARMUP_START - boot
        while self._now < WARMUP_START:
            self.cluster.reconcile(self._now)
            self._settle_resources()
            self._now += TICK
        self._now = WARMUP_START

    # --- clock ---------------------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self._now

    @property
    def store(self) -> SeriesStore:
        return self.telemetry.store

    def advance_to(self, t: float) -> None:
        if t < self._now:
            raise BackendError(f"cannot go back in time: now={self._now}, asked t={t}")
        while self._now + TICK <= t + 1e-9:
            self._tick()

    def _tick(self) -> None:
        t0, t1 = self._now, self._now + TICK
        self.cluster.reconcile(t0)
        tasks = self.load.tasks_between(t0, t1)
        executed = tasks
        if len(tasks) > self.task_cap:
            executed = sorted(self._sample_rng.sample(tasks, self.task_cap), key=lambda k: (k.t, k.user))
        total = sum(len(task.steps) for task in tasks)
        ran = sum(len(task.steps) for task in executed)
        weight = total / ran if ran else 1.0
        runtime = self.runtime
        runtime.sink = self.telemetry
        runtime.weight = weight
        failed = slow = 0.0
        for task in executed:
            for route, request in task.steps:
                self._request_counter += 1
                request_id, trace_id = self._ids(self._request_counter)
                outcome, trace = runtime.entry(route, request, task.t, request_id, trace_id)
                label = f"{request['method']} {request['path']}" if route == HTTP_STEP else route
                self.telemetry.add_trace(trace_id, task.t, label, trace.spans, outcome.status)
                if outcome.failed:
                    failed += 1
                if outcome.seconds > self.spec.slow_seconds:
                    slow += 1
        run_consumers(self, t0)
        runtime.sink = NullSink()
        self._settle_resources()
        self._now = t1
        self.telemetry.add_sli(t1, total / TICK, failed / ran if ran else 0.0, slow / ran if ran else 0.0)
        if abs(t1 / SCRAPE_EVERY - round(t1 / SCRAPE_EVERY)) < 1e-9:
            self._scrape(t1)

    def _load_generator_flag(self, name: str) -> Any:
        """A flag as the load generator reads it (locust's flood_home asks flagd over OFREP): its
        value while a flagd pod serves, else the task's default of 0."""
        source = self.spec.flags
        if source is None or not self.cluster.ready_pods(source.deployment):
            return 0
        return self.runtime.flag_value(name, 0)

    def _ids(self, n: int) -> tuple[str, str]:
        digest = hashlib.sha256(f"{self.seed}/{n}".encode()).hexdigest()
        return digest[:16], digest[16:48]

    def _settle_resources(self) -> None:
        for pod in self.cluster.pods.values():
            dep = self.spec.deployments[pod.deployment]
            demand = pod.cpu_demand / TICK + (IDLE_CORES + self.chaos.cpu_cores(pod.deployment) if pod.running else 0.0)
            capacity = self.cluster.limit_cores(pod)
            pod.utilisation = demand / capacity
            pod.cpu_seconds += min(demand, capacity) * TICK
            if pod.running:
                periods = TICK / CFS_PERIOD
                pod.cfs_periods += periods
                if demand > capacity:
                    pod.cfs_throttled += periods * (1.0 - capacity / demand)
            pod.cpu_demand = 0.0
            if not pod.running:
                pod.memory_bytes = 0.0
                continue
            memory = dep.base_memory + self.chaos.memory_bytes(pod.deployment, self.runtime.zone_of(pod))
            if pod.instance is not None:
                memory += pod.instance.memory_estimate()
            server = self.servers.get(pod.name) or self.brokers.get(pod.name) or self.memcached.get(pod.name)
            if server is not None:
                memory += server.used_bytes
            pod.memory_bytes = float(memory)

    def _scrape(self, t: float) -> None:
        rpc = {name: d.rpc_service for name, d in self.spec.deployments.items() if d.rpc_service}
        self.telemetry.scrape_requests(t, rpc)
        scrape_cluster(self.telemetry, self.cluster, self.servers, self.down_datastores, t)
        scrape_data_servers(self, t)

    def start_mongo(self, pod: Pod, dep: Any) -> None:
        """A mongod container starts: on its deployment's volume when it has one (DeathStarBench's
        mongodb-* deployments mount a PersistentVolumeClaim at /data/db), else on an empty data
        directory the init fills. Servers of pods that are gone are forgotten."""
        for name in [n for n in self.mongo_servers if n not in self.cluster.pods]:
            del self.mongo_servers[name]
        kept = self.mongo_volumes.get(dep.name) if dep.datastore.get("volume") else None
        server = start_server(pod.env, pod.args, dep.datastore, load_init(self.spec.path, dep.datastore.get("init")),
                              kept)
        if dep.datastore.get("volume"):
            self.mongo_volumes[dep.name] = server.data
        self.mongo_servers[pod.name] = server

    def mongo_shell(self, target: str, argv: list[str]) -> tuple[int, str, str]:
        """`kubectl exec <pod> -- mongo ...`: the shell in a mongodb pod (a pod name, or a deployment
        for its first running pod). A stopped mongod refuses the shell's connection."""
        pods = sorted((p for p in self.cluster.pods.values() if target in (p.name, p.deployment) and p.running),
                      key=lambda p: p.name)
        if not pods or pods[0].name not in self.mongo_servers:
            raise BackendError(f"no running mongodb container in {target!r}")
        pod = pods[0]
        if self.runtime.is_down(pod):
            from pytest_marathon.twin.mongoshell import refused_output
            return refused_output(argv)
        return self.mongo_servers[pod.name].shell(argv)

    def startup_context(self, pod: Pod) -> Any:
        """The ctx a container's `init(ctx)` gets: its env and log, at the pod's start time."""
        trace_id = hashlib.sha256(f"{self.seed}/start/{pod.name}/{pod.restart_count}".encode()).hexdigest()[:32]
        self.runtime.sink = self.telemetry
        return CallContext(self.runtime, pod, _Trace(trace_id, trace_id[:16], self._now), "", 30_000.0)

    # --- reads -------------------------------------------------------------------------------------------
    def workloads(self) -> list[str]:
        return sorted(self.spec.deployments)

    def infrastructure(self) -> list[str]:
        return sorted(self.spec.infrastructure)

    def logs(self, *, service: str | None = None, since: float | None = None, until: float | None = None,
             level: str | None = None, contains: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        lines = self.telemetry.query_logs(service=service, since=since, until=until, level=level,
                                          contains=contains, limit=limit)
        # a line is a container's (`kubectl logs <pod> -c server`, a log agent's `container`
        # label): the name the manifest gives it, `server` for every Online Boutique service
        return [_with_container(line, self.spec.deployments.get(line.get("service", ""))) for line in lines]

    def traces(self, *, service: str | None = None, since: float | None = None, until: float | None = None,
               errors_only: bool = False, min_duration_ms: float | None = None, limit: int = 20) -> list[dict[str, Any]]:
        return self.telemetry.query_traces(service=service, since=since, until=until, errors_only=errors_only,
                                           min_duration_ms=min_duration_ms, limit=limit)

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        return self.telemetry.trace(trace_id)

    def topology(self) -> dict[str, Any]:
        services = {s.name: s for s in self.spec.services.values()}
        edges = []
        for name, dep in sorted(self.cluster.deployments.items()):
            for var, value in sorted(dep.template.env.items()):
                if not addresses.is_address_var(var):
                    continue
                host = addresses.host_of(value)
                target = services[host].selector if host in services else None
                edges.append({"from": name, "to": target, "via": var, "address": value})
            for host in self.spec.deployments[name].calls:  # addresses the source hard-codes
                service = services.get(host)
                edges.append({"from": name, "to": service.selector if service else None, "via": "source",
                              "address": f"{host}:{service.port}" if service else host})
        return {
            "namespace": self.namespace,
            "entrypoint": {"service": self.spec.entry_service, "deployment": self.spec.entry_deployment},
            "deployments": [
                {"name": n, "kind": d.kind, "language": d.language, "port": d.port,
                 "rpc_service": d.rpc_service or None}
                for n, d in sorted(self.spec.deployments.items())
            ],
            "services": [
                {"name": s.name, "port": s.port, "targetPort": s.target_port, "deployment": s.selector}
                for s in sorted(services.values(), key=lambda s: s.name)
            ],
            "edges": edges,
        }

    def resources(self, kind: str, name: str | None = None) -> list[dict[str, Any]]:
        kind = resource_kind(kind)
        out = []
        cluster = self.cluster
        ns = self.namespace
        if kind == "deployments":
            for dname, dep in sorted(cluster.deployments.items()):
                out.append(deployment_k8s(dep, ns, cluster.pods_of(dname), self._now))
        elif kind == "replicasets":
            for _name, dep in sorted(cluster.deployments.items()):
                for rs in dep.replica_sets:
                    ready = sum(1 for p in cluster.pods.values() if p.replica_set == rs.name and p.ready)
                    out.append(replicaset_k8s(rs, ns, dep.port, ready))
        elif kind == "pods":
            for pod in sorted(cluster.pods.values(), key=lambda p: p.name):
                out.append(pod_k8s(pod, ns, cluster.deployments[pod.deployment].port))
            if cluster.unscheduled:
                for pod, message in (cluster.unscheduled[n] for n in sorted(cluster.unscheduled)):
                    out.append(unscheduled_pod_k8s(pod, ns, cluster.deployments[pod.deployment].port, message))
                out.sort(key=lambda o: o["metadata"]["name"])
        elif kind == "services":
            for svc in sorted(self.spec.services.values(), key=lambda s: s.name):
                out.append(service_k8s(svc.name, ns, svc.port, svc.target_port, svc.selector, svc.type,
                                       self.runtime.cluster_ip(svc.name), svc.port_name, svc.traffic_distribution))
        elif kind == "configmaps":
            for cname, data in sorted(cluster.configmaps.items()):
                out.append(configmap_k8s(cname, ns, data))
        else:
            for node in cluster.nodes.values():
                out.append(node_k8s(node, sum(1 for p in cluster.pods.values() if p.node == node.name)))
        if name is not None:
            out = [o for o in out if o["metadata"]["name"] == name or
                   kind == "pods" and o["metadata"]["labels"].get("app") == name]
            if not out:
                raise BackendError(f"{kind[:-1]} {name!r} not found in namespace {ns}")
        return out

    def events(self, *, since: float | None = None, object_name: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        return self.event_log.query(since=since, object_name=object_name, limit=limit)

    def rollout_history(self, deployment: str) -> list[dict[str, Any]]:
        dep = self._deployment(deployment)
        current = dep.current_rs()
        return [
            {"revision": rs.revision, "change_cause": rs.change_cause, "image": rs.template.image,
             "replica_set": rs.name, "created_at": rs.created_at, "current": rs is current}
            for rs in sorted(dep.replica_sets, key=lambda r: r.revision)
        ]

    def rollout_completed_at(self, deployment: str, revision: int | None = None) -> float | None:
        """When the rollout of `revision` (default: the current one) finished: every wanted replica
        ready on it and no old pod left (the moment Progressing turns NewReplicaSetAvailable).
        None while it is in progress, and for a revision a later change superseded."""
        dep = self._deployment(deployment)
        if revision is not None and revision != dep.revision():
            return None
        return dep.rollout_complete_at

    def source(self, service: str, *, revision: int | None = None, path: str | None = None) -> dict[str, str]:
        files = self._files_of(service, revision)
        if path is not None:
            if path not in files:
                raise BackendError(f"{service} has no file {path!r}; files: {', '.join(sorted(files))}")
            return {path: files[path]}
        return files

    def source_diff(self, service: str, from_revision: int, to_revision: int) -> str:
        old, new = self._files_of(service, from_revision), self._files_of(service, to_revision)
        chunks = []
        for path in sorted(set(old) | set(new)):
            chunks.extend(difflib.unified_diff(
                old.get(path, "").splitlines(keepends=True), new.get(path, "").splitlines(keepends=True),
                fromfile=f"a/{path}", tofile=f"b/{path}"))
        return "".join(chunks)

    def _files_of(self, service: str, revision: int | None) -> dict[str, str]:
        dep = self._deployment(service)
        if revision is None:
            image = dep.template.image
        else:
            rs = next((r for r in dep.replica_sets if r.revision == revision), None)
            if rs is None:
                raise BackendError(f"{service} has no revision {revision}; revisions: "
                                   f"{', '.join(str(r.revision) for r in sorted(dep.replica_sets, key=lambda r: r.revision))}")
            image = rs.template.image
        if not self.registry.has_code(image):
            raise BackendError(f"{service} image {image} has no source in the registry")
        return self.registry.files(image)

    def exec(self, pod: str, command: list[str], container: str = "") -> dict[str, Any]:
        """`kubectl exec <pod> -- <command>`: {"code", "stdout", "stderr"} of a program the twin
        knows in that container (twin/pod_exec.py); BackendError when it cannot be started."""
        try:
            done = exec_in_pod(self, pod, container, [str(word) for word in command])
        except LookupError:
            raise BackendError(f'pods "{pod}" not found') from None
        except ExecFailed as exc:
            raise BackendError(str(exc)) from None
        return {"code": done.code, "stdout": done.stdout, "stderr": done.stderr}

    def sli_samples(self, since: float | None = None) -> list[SliSample]:
        samples = self.telemetry.sli
        if since is None:
            return list(samples)
        # appended in time order: the runner asks for the newest few every step
        return samples[bisect_left(samples, since, key=lambda s: s.t):]

    def flag_readers(self, name: str) -> list[str]:
        """Workloads whose deployed code (the current template's image) reads flag `name`.

        Read statically, like a code search: a call `<x>.flag("name", ...)` in a service module
        (its unit tests excluded: they never run in a pod). An image's code never changes under
        its tag, so each image is parsed once."""
        readers = []
        for workload in self.workloads():
            image = self.cluster.deployments[workload].template.image
            if not self.registry.has_code(image):
                continue  # a datastore runs no service code
            if image not in self._flags_by_image:
                self._flags_by_image[image] = flags_read(self.registry.files(image))
            if name in self._flags_by_image[image]:
                readers.append(workload)
        return readers

    # --- agent actions -----------------------------------------------------------------------------------
    def _deployment(self, name: str) -> Any:
        dep = self.cluster.deployments.get(name)
        if dep is None:
            raise BackendError(f"unknown deployment {name!r}; deployments: {', '.join(self.workloads())}")
        return dep

    def _result(self, name: str, verb: str) -> ActionResult:
        dep = self.cluster.deployments[name]
        return ActionResult(True, f"deployment.apps/{name} {verb}", dep.revision(), dep.rollout_complete_at,
                            {"generation": dep.generation})

    def restart(self, deployment: str) -> ActionResult:
        self._deployment(deployment)
        self.cluster.rollout_restart(deployment, self._now)
        return self._result(deployment, "restarted")

    def scale(self, deployment: str, replicas: int) -> ActionResult:
        self._deployment(deployment)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or not 0 <= replicas <= MAX_REPLICAS:
            raise BackendError(f"replicas must be an integer between 0 and {MAX_REPLICAS}, got {replicas!r}")
        self.cluster.scale(deployment, replicas, self._now)
        return self._result(deployment, "scaled")

    def rollback(self, deployment: str, to_revision: int | None = None) -> ActionResult:
        dep = self._deployment(deployment)
        current = dep.current_rs()
        history = sorted(dep.replica_sets, key=lambda r: r.revision)
        if to_revision is None:
            older = [r for r in history if r.revision < current.revision]
            if not older:
                raise BackendError(f"no rollout history found for deployment {deployment!r} before revision {current.revision}")
            target = older[-1]
        else:
            target = next((r for r in history if r.revision == to_revision), None)
            if target is None:
                raise BackendError(f"unable to find specified revision {to_revision} in history of {deployment}")
            if target is current:
                raise BackendError(f"revision {to_revision} is already the current revision of {deployment}")
        self.cluster.change_template(deployment, target.template.copy(), target.change_cause, self._now)
        return self._result(deployment, "rolled back")

    def update_config(self, deployment: str, *, env: Mapping[str, str | None] | None = None,
                      resources: Mapping[str, str] | None = None, change_cause: str = "") -> ActionResult:
        if not env and not resources:
            raise BackendError("update_config needs env and/or resources")
        return self._apply_change(deployment, env=env, resources=resources, probes_patch=None, image=None,
                                  change_cause=change_cause or _describe_change(env, resources))

    def feature_flags(self) -> dict[str, str]:
        if self.spec.flags is not None:
            flags = self.runtime.flag_file(self.spec.flags)
            return {name: str(flag.get("defaultVariant", "")) for name, flag in sorted(flags.items())
                    if isinstance(flag, dict)}
        return dict(self.cluster.configmaps.get("feature-flags", {}))

    def set_feature_flag(self, name: str, value: str) -> ActionResult:
        if not isinstance(name, str) or not name or not isinstance(value, str):
            raise BackendError("a feature flag needs a non-empty name and a string value")
        if self.spec.flags is not None:
            return self._set_flagd_variant(name, value)
        flags = self.cluster.configmaps.setdefault("feature-flags", {})
        flags[name] = value
        self.event_log.add(self._now, "Normal", "Updated", "ConfigMap", "feature-flags", f"flag {name} set")
        return ActionResult(True, f"configmap/feature-flags patched ({name}={value})", None, self._now)

    def set_container_args(self, deployment: str, args: list[str], change_cause: str = "") -> ActionResult:
        if not isinstance(args, list | tuple) or not all(isinstance(a, str) for a in args):
            raise BackendError(f"args must be a list of strings, got {args!r}")
        return self._apply_change(deployment, env=None, resources=None, probes_patch=None, image=None,
                                  args=tuple(args), change_cause=change_cause or "args " + " ".join(args))

    def set_container_command(self, deployment: str, command: list[str], change_cause: str = "") -> ActionResult:
        if not isinstance(command, list | tuple) or not command or not all(isinstance(a, str) and a for a in command):
            raise BackendError(f"command must be a non-empty list of strings, got {command!r}")
        self._deployment(deployment)
        try:
            programs.program_of(self.spec, deployment, command)
        except programs.UnknownProgram as exc:
            raise BackendError(str(exc)) from None
        return self._apply_change(deployment, env=None, resources=None, probes_patch=None, image=None,
                                  command=tuple(command), change_cause=change_cause or "command " + " ".join(command))

    def set_node_selector(self, deployment: str, selector: Mapping[str, str] | None,
                          change_cause: str = "") -> ActionResult:
        if selector is not None and (not isinstance(selector, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in selector.items())):
            raise BackendError(f"nodeSelector must map label names to string values, got {selector!r}")
        wanted = dict(selector or {})
        text = ",".join(f"{k}={v}" for k, v in sorted(wanted.items())) or "none"
        return self._apply_change(deployment, env=None, resources=None, probes_patch=None, image=None,
                                  node_selector=wanted, change_cause=change_cause or f"nodeSelector {text}")

    def set_service_target_port(self, service: str, target_port: int, port_index: int = 0) -> ActionResult:
        """kube-proxy programs the new targetPort at once; the Endpoints list the pods on it.
        A caller's connection reaches the pod on that port, and nothing listening there
        refuses it (runtime.py compares the pod's listen port with the Service's)."""
        svc = self.spec.services.get(service)
        if svc is None:
            raise BackendError(f'services "{service}" not found')
        if port_index != 0:
            raise BackendError(f"service {service} has one port; spec.ports[{port_index}] does not exist")
        if isinstance(target_port, bool) or not isinstance(target_port, int) or not 1 <= target_port <= 65535:
            raise BackendError(f"targetPort must be between 1 and 65535, inclusive, got {target_port!r}")
        if target_port != svc.target_port:
            self.spec.services[service] = dataclasses.replace(svc, target_port=target_port)
        return ActionResult(True, f"service/{service} patched (targetPort={target_port})", None, self._now)

    def _set_flagd_variant(self, name: str, variant: str) -> ActionResult:
        """flagd apps: choose the flag's default variant in the flag file flagd watches (what the
        demo's flagd-ui writes); an unknown flag or variant changes nothing."""
        source = self.spec.flags
        data = self.cluster.configmaps.get(source.configmap, {})
        try:
            document = json.loads(data.get(source.key, ""))
        except ValueError as exc:
            raise BackendError(f"configmap/{source.configmap} {source.key} is not valid JSON: {exc}") from None
        flags = document.get("flags", {})
        if name not in flags:
            raise BackendError(f"no feature flag {name!r}; flags: {', '.join(sorted(flags))}")
        variants = flags[name].get("variants", {})
        if variant not in variants:
            raise BackendError(f"flag {name} has no variant {variant!r}; variants: {', '.join(variants)}")
        flags[name]["defaultVariant"] = variant
        data[source.key] = json.dumps(document, indent=2, sort_keys=True)
        self.event_log.add(self._now, "Normal", "Updated", "ConfigMap", source.configmap, f"flag {name} set")
        return ActionResult(True, f"configmap/{source.configmap} patched ({name} defaultVariant={variant})", None,
                            self._now)

    def build_image(self, service: str, files: Mapping[str, str]) -> BuildResult:
        dep = self._deployment(service)
        if not files or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            raise BackendError("build_image needs a mapping of file path to text")
        base = self.registry.files(dep.template.image)
        working = {**base, **dict(files)}
        failures, log = images.build(service, working)
        if failures:
            return BuildResult(False, None, failures, log)
        tag = images.build_tag(self.spec.deployments[service].image, working)
        self.registry.push(tag, service, working)
        return BuildResult(True, tag, (), log + f"\npushed {tag}")

    def deploy_image(self, deployment: str, image: str, change_cause: str = "") -> ActionResult:
        if not isinstance(image, str) or ":" not in image:
            raise BackendError(f"image must look like name:tag, got {image!r}")
        return self._apply_change(deployment, env=None, resources=None, probes_patch=None, image=image,
                                  change_cause=change_cause or f"deploy image {image}")

    # --- fault API -----------------------------------------------------------------------------------------
    def release(self, deployment: str, *, image: str | None = None, env: Mapping[str, EnvValue] | None = None,
                resources: Mapping[str, str] | None = None, probes: Mapping[str, Any] | None = None,
                patch: str | None = None, strategy: Mapping[str, Any] | None = None,
                change_cause: str) -> ActionResult:
        dep = self._deployment(deployment)
        wanted_strategy = dep.strategy()
        if strategy is not None:
            try:
                wanted_strategy = dep.parse_strategy(strategy)
            except ValueError as exc:
                raise BackendError(f"{deployment}: {exc}") from None
        if patch is not None:
            try:
                files = apply_patch(self.registry.files(dep.template.image), patch)
            except PatchError as exc:
                raise BackendError(f"patch does not apply to {deployment}: {exc}") from None
            built = self.build_image(deployment, files)
            if not built.ok:
                return ActionResult(False, "build failed: " + "; ".join(built.failures), dep.revision(), None,
                                    {"log": built.log})
            image = built.image
        return self._apply_change(deployment, env=env, resources=resources, probes_patch=probes, image=image,
                                  change_cause=change_cause, strategy=wanted_strategy)

    def _apply_change(self, deployment: str, *, env: Mapping[str, EnvValue] | None, resources: Mapping[str, str] | None,
                      probes_patch: Mapping[str, Any] | None, image: str | None, change_cause: str,
                      strategy: tuple[str, str, str] | None = None,
                      args: tuple[str, ...] | None = None,
                      node_selector: dict[str, str] | None = None,
                      command: tuple[str, ...] | None = None) -> ActionResult:
        """Change the pod template (a new revision) and, for a release, the rollout strategy
        that carries it out; a strategy alone is a new generation but no new revision, as in
        Kubernetes. Everything is checked before anything changes."""
        dep = self._deployment(deployment)
        template = dep.template.copy()
        template.restarted_at = dep.template.restarted_at
        for var, value in (env or {}).items():
            if not isinstance(var, str) or not var:
                raise BackendError(f"env names must be non-empty strings, got {var!r}")
            # one entry per name, as `kubectl set env` leaves it: a new value replaces the old
            # entry whether that was a literal or a Secret reference
            template.env.pop(var, None)
            template.secret_env.pop(var, None)
            if isinstance(value, Mapping):
                template.secret_env[var] = self._secret_ref(var, value)
            elif value is not None:
                template.env[var] = str(value)
        for key, value in (resources or {}).items():
            section, _, res = key.rpartition(".")
            section = section or "limits"
            if section not in ("limits", "requests") or res not in ("cpu", "memory"):
                raise BackendError(f"resource keys are cpu, memory, limits.cpu, requests.memory, ...; got {key!r}")
            try:
                (parse_cpu if res == "cpu" else parse_memory)(value)
            except QuantityError as exc:
                raise BackendError(str(exc)) from None
            template.resources[section][res] = str(value)
        for kind, changes in (probes_patch or {}).items():
            if kind not in ("readiness", "liveness"):
                raise BackendError(f"probe patch must map readiness/liveness to fields, got {kind!r}")
            if changes is None:  # the probe is removed (restoring a pod spec that had none)
                template.probes.pop(kind, None)
                continue
            if not isinstance(changes, Mapping):
                raise BackendError(f"probe patch must map readiness/liveness to fields, got {kind!r}")
            if kind not in template.probes:
                # a probe the pod spec did not have: it must be whole
                if changes.get("type") not in PROBE_TYPES or not isinstance(changes.get("port"), int):
                    raise BackendError(f"a new {kind} probe needs a type ({', '.join(PROBE_TYPES)}) and a port")
                template.probes[kind] = dict(changes)
                continue
            template.probes[kind].update(dict(changes))
        if image is not None:
            template.image = image
        if args is not None:
            template.args = args
        if command is not None:
            template.command = command
        if node_selector is not None:
            template.node_selector = node_selector
        strategy_changed = strategy is not None and strategy != dep.strategy()
        if strategy_changed:
            dep.strategy_type, dep.max_surge, dep.max_unavailable = strategy
        if template.hash() == dep.template.hash():
            if strategy_changed:
                self.cluster.bump_generation(deployment)
                # no new revision, but the apply's change-cause reaches the current ReplicaSet
                # as any deployment annotation does (getNewReplicaSet, deployment/sync.go)
                if change_cause:
                    self.annotate_change_cause(deployment, change_cause)
                return self._result(deployment, "configured")
            return ActionResult(True, f"deployment.apps/{deployment} unchanged", dep.revision(), self._now)
        self.cluster.change_template(deployment, template, change_cause, self._now)
        return self._result(deployment, "configured")

    def _secret_ref(self, var: str, value: Mapping[str, Any]) -> tuple[str, str]:
        """A `valueFrom: {secretKeyRef: {name, key}}` document, checked against the Secrets."""
        ref = value.get("secretKeyRef")
        if set(value) != {"secretKeyRef"} or not isinstance(ref, Mapping):
            raise BackendError(f"env {var}: valueFrom supports only secretKeyRef, got {dict(value)!r}")
        name, key = ref.get("name"), ref.get("key")
        if not isinstance(name, str) or not isinstance(key, str) or not name or not key:
            raise BackendError(f"env {var}: secretKeyRef needs a name and a key, got {dict(ref)!r}")
        if name not in self.cluster.secrets:
            raise BackendError(f"env {var}: secret {name!r} does not exist")
        return name, key

    def push_image(self, deployment: str, image: str) -> None:
        dep = self._deployment(deployment)
        if not isinstance(image, str) or ":" not in image:
            raise BackendError(f"image must look like name:tag, got {image!r}")
        self.registry.push(image, deployment, self.registry.files(dep.template.image))

    def annotate_change_cause(self, deployment: str, change_cause: str) -> None:
        # `kubectl annotate deployment/<name> kubernetes.io/change-cause=...`: the deployment
        # controller copies the deployment's annotations onto the existing new ReplicaSet on its
        # next sync (getNewReplicaSet -> SetNewReplicaSetAnnotations, kubernetes/kubernetes
        # pkg/controller/deployment/sync.go)
        rs = self._deployment(deployment).current_rs()
        if rs is not None:
            rs.change_cause = change_cause

    def chaos_start(self, kind: str, target: str, **params: Any) -> str:
        return self.chaos.start(kind, target, params, self._now)

    def chaos_stop(self, handle: str) -> None:
        self.chaos.stop(handle, self._now)

    # --- probes --------------------------------------------------------------------------------------------
    def probe(self, spec: Mapping[str, Any]) -> bool:
        return probes.run_probe(self, spec)

    def artifact_value(self, artifact: str) -> str | None:
        return probes.artifact_value(self, artifact)

    # --- determinism ---------------------------------------------------------------------------------------
    def telemetry_digest(self) -> str:
        """SHA-256 over everything observable: metrics, logs, traces, events, SLI."""
        digest = hashlib.sha256()
        for series in sorted(self.telemetry.store, key=lambda s: s.key):
            digest.update(json.dumps([series.key, [round(v, 6) for v in series.times],
                                      [round(v, 6) for v in series.values]]).encode())
        for record in self.telemetry.logs:
            digest.update(json.dumps(record).encode())
        for trace in self.telemetry.traces:
            digest.update(json.dumps([trace["trace_id"], trace["duration_ms"], trace["error"]]).encode())
        for event in self.event_log.all():
            digest.update(json.dumps([event.t, event.reason, event.name, event.message, event.count]).encode())
        for s in self.telemetry.sli:
            digest.update(json.dumps([s.t, s.q, s.e, s.l]).encode())
        return digest.hexdigest()


def flags_read(files: Mapping[str, str]) -> frozenset[str]:
    """Flag names a service's modules pass as a string literal to a `.flag(...)` call (first
    argument or `name=`); test modules (`test_*.py`) and files that do not parse are skipped."""
    names: set[str] = set()
    for path, text in files.items():
        module = path.rsplit("/", 1)[-1]
        if not module.endswith(".py") or module.startswith("test_"):
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "flag"):
                continue
            given = node.args[:1] + [k.value for k in node.keywords if k.arg == "name"]
            names.update(a.value for a in given if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return frozenset(names)


def _describe_change(env: Mapping[str, str | None] | None, resources: Mapping[str, str] | None) -> str:
    parts = [f"{k}={v}" if v is not None else f"{k}-" for k, v in sorted((env or {}).items())]
    parts += [f"{k}={v}" for k, v in sorted((resources or {}).items())]
    return "update_config " + " ".join(parts)


def _with_container(line: dict[str, Any], dep: Any) -> dict[str, Any]:
    if dep is None:
        return line
    out: dict[str, Any] = {}
    for key, value in line.items():
        out[key] = value
        if key == "pod":
            out["container"] = dep.container
    return out
