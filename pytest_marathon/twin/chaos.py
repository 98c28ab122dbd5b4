"""Direct faults (the Chaos Mesh / chaostoolkit actions of a cluster) applied to the twin.

Each fault is a piece of state the rest of the twin consults (network effects on an edge, extra
CPU or memory in a workload's containers, a datastore that refuses connections) or a one-shot
change to the cluster (pod kill, node failure, secret rotation). `stop` undoes what `start` did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_marathon.backends.base import BackendError
from pytest_marathon.twin.cluster import Cluster
from pytest_marathon.twin.datastore import RedisServer
from pytest_marathon.twin.quantities import QuantityError, parse_memory
from pytest_marathon.twin.runtime import NO_EFFECT, EdgeEffect

KINDS = (
    "pod_kill",
    "pod_failure",
    "container_kill",
    "cpu_hog",
    "memory_hog",
    "network_delay",
    "network_loss",
    "partition",
    "datastore_outage",
    "redis_maxmemory",
    "node_failure",
    "credential_rotation",
    "mongo_revoke_roles",
    "mongo_drop_user",
    "mysql_revoke_grants",
)

#: The image Chaos Mesh's pod-failure puts in the containers' place (chaos-mesh pkg/config/
#: controller.go, PodFailurePauseImage's default).
PAUSE_IMAGE = "gcr.io/google-containers/pause:latest"
#: How the app's process ends on the kubelet's SIGTERM (Go's default handler: killed by the signal,
#: 128 + 15), and how /pause does (its sigdown handler exits 0).
SIGTERM_EXIT = 143
PAUSE_EXIT = 0

# Who picks up a rotated credential: the datastore server alone (clients keep the old value until
# they restart), or the clients alone (a reloader restarts them; the server keeps the old value).
ROTATION_RELOADS = ("server", "clients")


@dataclass
class ChaosFault:
    handle: str
    kind: str
    target: str
    params: dict[str, Any]
    undo: dict[str, Any] = field(default_factory=dict)


class Chaos:
    def __init__(self, cluster: Cluster, servers: dict[str, RedisServer], down_datastores: set[str]) -> None:
        self.cluster = cluster
        self.servers = servers
        self.down_datastores = down_datastores
        self.active: dict[str, ChaosFault] = {}
        self._counter = 0
        self._edges: dict[tuple[str, str], EdgeEffect] = {}
        self._zoned: dict[tuple[str, str], list[tuple[str, str, EdgeEffect]]] = {}
        self.pg_servers: dict[str, Any] = {}  # the twin's PostgreSQL servers by pod
        self.memcached: dict[str, Any] = {}  # the twin's memcached servers by pod
        self.mongo_servers: dict[str, Any] = {}
        self.mysql_servers: dict[str, Any] = {}  # the twin's MySQL servers by pod  # the twin's MongoDB servers by pod
        cluster.controllers.append(self._repeat)
        cluster.controllers.append(self._expire)

    # --- what the rest of the twin consults --------------------------------------------------------
    def edge_effect(self, src: str, dst: str, src_zone: str = "", dst_zone: str = "") -> EdgeEffect:
        """The network between a `src` and a `dst` pod. A fault with a `zone` acts on the target's
        pod in that zone only (netem on that pod's interface), so the other zone's replica of the
        same workload is untouched."""
        if not self._edges:
            return NO_EFFECT
        effect = self._edges.get((src, dst), NO_EFFECT)
        zoned = self._zoned.get((src, dst))
        if zoned:
            for side, zone, extra in zoned:
                if (src_zone if side == "src" else dst_zone) == zone:
                    effect = _combine(effect, extra)
        return effect

    def pod_delay_ms(self, deployment: str) -> float:
        """Delay on all of a pod's traffic (a network delay with no peer: netem on the pod's own
        interface, which the kubelet's probes cross too)."""
        return sum(float(f.params.get("delay_ms", 0.0)) for f in self.active.values()
                   if f.kind == "network_delay" and f.target == deployment and f.params.get("peer") is None)

    def pod_loss(self, deployment: str) -> float:
        """Packet loss on all of a pod's traffic (a loss fault with no peer)."""
        return max((float(f.params.get("loss", 0.0)) for f in self.active.values()
                    if f.kind == "network_loss" and f.target == deployment and f.params.get("peer") is None),
                   default=0.0)

    def cpu_cores(self, deployment: str) -> float:
        return sum(float(f.params.get("cores", 1.0)) for f in self.active.values()
                   if f.kind == "cpu_hog" and f.target == deployment)

    def memory_bytes(self, deployment: str, zone: str = "") -> int:
        """Memory a hog holds in the deployment's container (with `zone`: that site's only)."""
        return sum(f.undo["bytes"] for f in self.active.values() if f.kind == "memory_hog" and f.target == deployment
                   and f.params.get("zone") in (None, "", zone))

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self, kind: str, target: str, params: dict[str, Any], now: float) -> str:
        if kind not in KINDS:
            raise BackendError(f"unknown chaos kind {kind!r}; known: {', '.join(KINDS)}")
        cluster = self.cluster
        if kind == "node_failure":
            node = self._node_of(target, params.get("zone"))
            if not cluster.nodes[node].ready:
                raise BackendError(f"node {node} is already NotReady")
        elif target not in cluster.deployments:
            raise BackendError(f"unknown chaos target {target!r}; deployments: {', '.join(sorted(cluster.deployments))}")
        fault = ChaosFault("", kind, target, dict(params))
        getattr(self, f"_start_{kind}")(fault, now)
        self._counter += 1
        fault.handle = f"chaos-{self._counter:04d}-{kind.replace('_', '-')}"
        self.active[fault.handle] = fault
        self._rebuild_edges()
        return fault.handle

    def stop(self, handle: str, now: float) -> None:
        fault = self.active.pop(handle, None)
        if fault is None:
            raise BackendError(f"no active chaos with handle {handle!r}")
        undo = getattr(self, f"_stop_{fault.kind}", None)
        if undo is not None:
            undo(fault, now)
        self._rebuild_edges()

    # --- kinds ---------------------------------------------------------------------------------------
    def _repeat(self, now: float) -> None:
        """A pod kill with an `interval` kills again every interval while it lasts (Chaos Mesh's
        scheduled PodChaos), so the service keeps flapping instead of healing in seconds."""
        for handle in sorted(self.active):
            fault = self.active[handle]
            if fault.kind == "pod_kill" and "interval" in fault.params and now >= fault.undo["next"]:
                self._kill_pods(fault, now)
                fault.undo["next"] = now + float(fault.params["interval"])

    def _expire(self, now: float) -> None:
        """A pod-failure with a `duration` recovers by itself when it runs out (Chaos Mesh's
        controller calls Recover at the end of the duration); its object, and our handle, stay
        until deleted, and deleting it then changes nothing."""
        for handle in sorted(self.active):
            fault = self.active[handle]
            if fault.kind == "pod_failure" and not fault.undo["recovered"] and now >= fault.undo["until"]:
                self._stop_pod_failure(fault, now)

    def _start_pod_failure(self, fault: ChaosFault, now: float) -> None:
        """Chaos Mesh pod-failure (controllers/chaosimpl/podchaos/podfailure/impl.go): each chosen
        pod's container image is patched to the pause image and the original kept to put back.
        The pod stays; the kubelet restarts the container with /pause, which listens on nothing,
        so connections to it are refused (Ready all the same when the pod has no readiness
        probe). `count` pods (mode one: 1), `duration` seconds (none: until stopped)."""
        duration = fault.params.get("duration")
        if duration is not None and float(duration) <= 0:
            raise BackendError("pod_failure duration must be > 0 s")
        pods = sorted(self.cluster.pods_of(fault.target), key=lambda p: p.name)
        pods = [p for p in pods if p.template.image != PAUSE_IMAGE][:int(fault.params.get("count", 1))]
        if not pods:
            raise BackendError(f"pod_failure: {fault.target} has no pod to fail")
        fault.undo.update(recovered=False, until=now + float(duration) if duration is not None else float("inf"),
                          pods=[(p.name, p.template.image) for p in pods])
        for pod in pods:
            self.cluster.swap_image(pod, PAUSE_IMAGE, now, SIGTERM_EXIT)

    def _stop_pod_failure(self, fault: ChaosFault, now: float) -> None:
        """Recover: the original image patched back into the pods still there (a deleted pod's
        replacement was made from the ReplicaSet's template and never failed)."""
        if fault.undo["recovered"]:
            return
        fault.undo["recovered"] = True
        for name, image in fault.undo["pods"]:
            pod = self.cluster.pods.get(name)
            if pod is not None and not pod.terminating and pod.template.image == PAUSE_IMAGE:
                self.cluster.swap_image(pod, image, now, PAUSE_EXIT)

    def _start_container_kill(self, fault: ChaosFault, now: float) -> None:
        """Chaos Mesh container-kill (controllers/chaosimpl/podchaos/containerkill/impl.go): the
        named container of one pod killed by the runtime, once; the kubelet restarts it. Recover
        does nothing, so stopping the fault does nothing either."""
        container = str(fault.params.get("container") or "")
        pods = sorted((p for p in self.cluster.pods_of(fault.target) if p.running), key=lambda p: p.name)
        if not pods:
            raise BackendError(f"container_kill: {fault.target} has no running container")
        if container != pods[0].template.container:
            raise BackendError(f"container_kill: {fault.target}'s pods have no container {container!r} "
                               f"(their container is {pods[0].template.container!r})")
        for pod in pods[:int(fault.params.get("count", 1))]:
            self.cluster.kill_container(pod, now)

    def _start_pod_kill(self, fault: ChaosFault, now: float) -> None:
        if "interval" in fault.params:
            if float(fault.params["interval"]) < 5.0:
                raise BackendError("pod_kill interval must be at least 5 s")
            fault.undo["next"] = now + float(fault.params["interval"])
        self._kill_pods(fault, now)

    def _kill_pods(self, fault: ChaosFault, now: float) -> None:
        zone = fault.params.get("zone")
        # with a zone, the replica of one site only
        pods = (self._zone_pods(fault.target, str(zone)) if zone
                else sorted(self.cluster.pods_of(fault.target), key=lambda p: p.name))
        count = int(fault.params.get("count", len(pods)))
        for pod in pods[:count]:
            self.cluster.events.add(now, "Normal", "Killing", "Pod", pod.name, f"Stopping container {pod.deployment}")
            self.cluster.delete_pod(pod, now, grace_seconds=0)

    def _start_cpu_hog(self, fault: ChaosFault, now: float) -> None:
        cores = float(fault.params.setdefault("cores", 1.0))
        if cores <= 0:
            raise BackendError("cpu_hog needs cores > 0")

    def _start_memory_hog(self, fault: ChaosFault, now: float) -> None:
        amount = fault.params.get("size", fault.params.get("mb"))
        if amount is None:
            raise BackendError("memory_hog needs size (e.g. '200Mi') or mb")
        try:
            size = int(float(amount) * 1024**2) if "mb" in fault.params else parse_memory(amount)
        except (QuantityError, ValueError) as exc:
            raise BackendError(f"memory_hog: {exc}") from None
        fault.undo["bytes"] = size

    def _start_network_delay(self, fault: ChaosFault, now: float) -> None:
        if float(fault.params.setdefault("delay_ms", 500.0)) < 0:
            raise BackendError("network_delay needs delay_ms >= 0")
        self._check_peer(fault)

    def _start_network_loss(self, fault: ChaosFault, now: float) -> None:
        loss = float(fault.params.setdefault("loss", 0.5))
        if not 0 < loss <= 1:
            raise BackendError("network_loss needs 0 < loss <= 1")
        self._check_peer(fault)

    def _start_partition(self, fault: ChaosFault, now: float) -> None:
        if "peer" not in fault.params:
            raise BackendError("partition needs peer (the other side)")
        self._check_peer(fault)

    def _check_peer(self, fault: ChaosFault) -> None:
        peer = fault.params.get("peer")
        if peer is not None and peer not in self.cluster.deployments:
            raise BackendError(f"unknown peer {peer!r}")

    def _start_datastore_outage(self, fault: ChaosFault, now: float) -> None:
        """The server process stops: the whole deployment's, or with `zone` one site's replica
        (its pod name is marked), which its own zone's clients keep dialling."""
        self._require_datastore(fault)
        names = [fault.target]
        if fault.params.get("zone"):
            names = [p.name for p in self._zone_pods(fault.target, str(fault.params["zone"]))]
        fault.undo["down"] = names
        self.down_datastores.update(names)
        self.cluster.down_listeners.update(names)
        if self.cluster.spec.deployments[fault.target].kind == "memcached":
            # the stopped process takes its cache with it: it comes back empty, counters at zero
            for pod in sorted(self.cluster.pods_of(fault.target), key=lambda p: p.name):
                if pod.name in self.memcached and (fault.target in names or pod.name in names):
                    self.memcached[pod.name] = type(self.memcached[pod.name])(self.memcached[pod.name].settings)

    def _stop_datastore_outage(self, fault: ChaosFault, now: float) -> None:
        held = {n for f in self.active.values() if f.kind == "datastore_outage" for n in f.undo.get("down", [f.target])}
        for name in fault.undo.get("down", [fault.target]):
            if name not in held:
                self.down_datastores.discard(name)
                self.cluster.down_listeners.discard(name)

    def _start_redis_maxmemory(self, fault: ChaosFault, now: float) -> None:
        self._require_redis(fault)
        servers = self._servers_of(fault.target)
        if fault.params.get("zone"):
            zoned = {p.name for p in self._zone_pods(fault.target, str(fault.params["zone"]))}
            servers = {name: s for name, s in servers.items() if name in zoned}
        fault.undo["maxmemory"] = {name: s.maxmemory for name, s in servers.items()}
        for server in servers.values():
            limit = fault.params.get("maxmemory")
            server.maxmemory = parse_memory(limit) if limit is not None else server.used_bytes

    def _stop_redis_maxmemory(self, fault: ChaosFault, now: float) -> None:
        for name, value in fault.undo["maxmemory"].items():
            if name in self.servers:
                self.servers[name].maxmemory = value

    def _start_node_failure(self, fault: ChaosFault, now: float) -> None:
        zone = fault.params.get("zone")
        nodes = [self._node_of(fault.target, zone)]
        if fault.params.get("whole_zone"):
            # every node of the zone at once: the site is lost
            zone = self.cluster.nodes[nodes[0]].zone
            nodes = sorted(n for n, node in self.cluster.nodes.items() if node.zone == zone)
        fault.undo["nodes"] = nodes
        for node in nodes:
            self.cluster.set_node_ready(node, False, now)

    def _stop_node_failure(self, fault: ChaosFault, now: float) -> None:
        for node in fault.undo["nodes"]:
            self.cluster.set_node_ready(node, True, now)

    def _start_credential_rotation(self, fault: ChaosFault, now: float) -> None:
        """Rotate the datastore's password: the Secret and the running server change, clients don't."""
        if self.cluster.spec.deployments[fault.target].kind in ("postgres", "mysql"):
            self._rotate_postgres_user(fault)
            return
        self._require_redis(fault)
        secret_name, key = self._secret_of(fault.target)
        old = self.cluster.secrets[secret_name][key]
        new = str(fault.params.get("new_password", old + "-rotated"))
        servers = self._servers_of(fault.target).values()
        if new == old or any(new in s.also_accepted for s in servers):
            # a rotation never hands out a credential that was valid before: clients restarted
            # during an earlier rotation to the same value would otherwise be unaffected
            new = f"{new}.{self._counter + 1}"
        reload = fault.params.get("reload", "server")
        if reload not in ROTATION_RELOADS:
            raise BackendError(f"credential_rotation reload must be one of {', '.join(ROTATION_RELOADS)}, got {reload!r}")
        fault.undo.update(secret=secret_name, key=key, old=old, new=new, reload=reload)
        self.cluster.secrets[secret_name][key] = new
        if reload == "clients":
            self._restart_clients(secret_name, now)
            return
        for server in servers:
            server.password = new
            server.also_accepted.clear()  # rotating revokes every credential honoured before

    def _rotate_postgres_user(self, fault: ChaosFault) -> None:
        """`ALTER ROLE <user> PASSWORD '<new>'` in the running PostgreSQL servers (on MySQL
        `ALTER USER '<user>'@'%' IDENTIFIED BY '<new>'`); the clients' connection settings keep
        the old one. A fresh container runs the init script again, which sets the chart's
        password; a MySQL server on a volume keeps the rotated one."""
        user = str(fault.params.get("user") or "")
        table = self.mysql_servers if self.cluster.spec.deployments[fault.target].kind == "mysql" else self.pg_servers
        servers = {name: s for name, s in sorted(table.items()) if name.startswith(fault.target + "-")}
        if not servers or not all(user in s.users for s in servers.values()):
            raise BackendError(f"credential_rotation: {fault.target} has no running server with a role {user!r}")
        new = str(fault.params.get("new_password") or "")
        if not new:
            raise BackendError("credential_rotation of a PostgreSQL role needs new_password")
        fault.undo.update(pg={name: s.users[user] for name, s in servers.items()}, user=user)
        for server in servers.values():
            server.users[user] = new

    def _stop_credential_rotation(self, fault: ChaosFault, now: float) -> None:
        """Restore the original credential while still honouring the rotated one, the way an
        operator rolls back a rotation: clients restarted during it must not break again. When
        the reloader restarted the clients, it restarts them again for the restored Secret."""
        if "pg" in fault.undo:
            table = self.mysql_servers if self.cluster.spec.deployments[fault.target].kind == "mysql" else self.pg_servers
            for name, old in fault.undo["pg"].items():
                if name in table:
                    table[name].users[fault.undo["user"]] = old
            return
        self.cluster.secrets[fault.undo["secret"]][fault.undo["key"]] = fault.undo["old"]
        for server in self._servers_of(fault.target).values():
            if fault.undo["reload"] == "server" or server.password == fault.undo["new"]:
                server.password = fault.undo["old"]
                server.also_accepted.add(fault.undo["new"])
        if fault.undo["reload"] == "clients":
            self._restart_clients(fault.undo["secret"], now)

    def _mongo_users(self, fault: ChaosFault) -> dict[tuple[int, str, str], Any]:
        """The fault's user in every distinct data directory of the target's running servers (pods
        sharing a volume share one), keyed for a deterministic order."""
        if self.cluster.spec.deployments[fault.target].kind != "mongodb":
            raise BackendError(f"{fault.kind} needs a mongodb target, {fault.target!r} is not one")
        user, db = str(fault.params.get("user") or ""), str(fault.params.get("db") or "admin")
        found: dict[tuple[int, str, str], Any] = {}
        seen: set[int] = set()
        for name, server in sorted(self.mongo_servers.items()):
            if not name.startswith(fault.target + "-") or id(server.data) in seen:
                continue
            seen.add(id(server.data))
            if (db, user) not in server.data.users:
                raise BackendError(f"{fault.kind}: {fault.target} has no user {user!r} in database {db!r}")
            found[(len(found), db, user)] = server.data
        if not found:
            raise BackendError(f"{fault.kind}: {fault.target} has no running server")
        return found

    def _start_mongo_revoke_roles(self, fault: ChaosFault, now: float) -> None:
        """`db.revokeRolesFromUser(user, roles)` (AIOpsLab revoke_auth: `revoke-admin-*-mongo.sh`
        takes readWrite on the service's database from `admin`); `roles` defaults to all of them.
        Clients keep their credentials; their next command fails with Unauthorized (13)."""
        datas = self._mongo_users(fault)
        wanted = fault.params.get("roles")
        fault.undo["roles"] = []
        for (_i, db, user), data in sorted(datas.items()):
            held = data.users[(db, user)].roles
            drop = list(held) if wanted is None else [
                (r, db) if isinstance(r, str) else (str(r["role"]), str(r.get("db", db))) for r in wanted]
            fault.undo["roles"].append((data, db, user, list(held)))
            data.users[(db, user)].roles = [r for r in held if r not in drop]

    def _stop_mongo_revoke_roles(self, fault: ChaosFault, now: float) -> None:
        for data, db, user, roles in fault.undo["roles"]:
            if (db, user) in data.users:
                data.users[(db, user)].roles = list(roles)

    def _start_mongo_drop_user(self, fault: ChaosFault, now: float) -> None:
        """`db.dropUser(user)` (AIOpsLab storage_user_unregistered: `remove-admin-mongo.sh`):
        clients authenticating as that user fail with AuthenticationFailed (18)."""
        datas = self._mongo_users(fault)
        fault.undo["users"] = []
        for (_i, db, user), data in sorted(datas.items()):
            fault.undo["users"].append((data, db, user, data.users.pop((db, user))))

    def _stop_mongo_drop_user(self, fault: ChaosFault, now: float) -> None:
        for data, db, user, record in fault.undo["users"]:
            data.users.setdefault((db, user), record)

    def _start_mysql_revoke_grants(self, fault: ChaosFault, now: float) -> None:
        """`REVOKE ALL PRIVILEGES ON <database>.* FROM '<user>'@'%'` (every database when none is
        named) in the target's running servers: the user's next login to that default database
        fails with 1044, statements on it with 1142."""
        if self.cluster.spec.deployments[fault.target].kind != "mysql":
            raise BackendError(f"{fault.kind} needs a mysql target, {fault.target!r} is not one")
        user, database = str(fault.params.get("user") or ""), fault.params.get("database")
        servers = {id(s): s for name, s in sorted(self.mysql_servers.items()) if name.startswith(fault.target + "-")}
        if not servers or not all(user in s.users for s in servers.values()):
            raise BackendError(f"{fault.kind}: {fault.target} has no running server with a user {user!r}")
        fault.undo["grants"] = []
        for server in servers.values():
            held = server.db_grants.get(user, {})
            fault.undo["grants"].append((server, user, {db: set(p) for db, p in held.items()}))
            for db in sorted(held):
                if database in (None, db):
                    del held[db]

    def _stop_mysql_revoke_grants(self, fault: ChaosFault, now: float) -> None:
        for server, user, grants in fault.undo["grants"]:
            server.db_grants[user] = {db: set(p) for db, p in grants.items()}

    def _restart_clients(self, secret: str, now: float) -> None:
        """What a reloader (stakater Reloader, say) does when a Secret changes: a rollout restart
        of every workload whose env reads it (the datastore's own pods are not annotated)."""
        for name, dep in sorted(self.cluster.deployments.items()):
            if self.cluster.spec.deployments[name].kind == "datastore":
                continue
            if any(ref == secret for ref, _key in dep.template.secret_env.values()):
                self.cluster.rollout_restart(name, now)

    # --- helpers ---------------------------------------------------------------------------------------
    def _require_datastore(self, fault: ChaosFault) -> None:
        if self.cluster.spec.deployments[fault.target].kind not in ("datastore", "kafka", "postgres", "memcached", "mongodb",
                                                                        "mysql"):
            raise BackendError(f"{fault.kind} needs a datastore target, {fault.target!r} is not one")

    def _require_redis(self, fault: ChaosFault) -> None:
        if self.cluster.spec.deployments[fault.target].kind != "datastore":
            raise BackendError(f"{fault.kind} needs a datastore target, {fault.target!r} is not one")

    def _servers_of(self, deployment: str) -> dict[str, RedisServer]:
        return {name: s for name, s in sorted(self.servers.items()) if name.startswith(deployment + "-")}

    def _secret_of(self, deployment: str) -> tuple[str, str]:
        env = self.cluster.deployments[deployment].template.secret_env
        if not env:
            raise BackendError(f"{deployment} takes no credentials from a Secret")
        return next(iter(sorted(env.values())))

    def _zone_pods(self, deployment: str, zone: str) -> list[Any]:
        return sorted((p for p in self.cluster.pods_of(deployment) if self.cluster.nodes[p.node].zone == zone),
                      key=lambda p: p.name)

    def _node_of(self, target: str, zone: str | None = None) -> str:
        if target in self.cluster.nodes:
            return target
        pods = self._zone_pods(target, zone) if zone else sorted(self.cluster.pods_of(target), key=lambda p: p.name)
        if not pods:
            raise BackendError(f"unknown node or deployment without pods: {target!r}")
        return pods[0].node

    def _rebuild_edges(self) -> None:
        edges: dict[tuple[str, str], EdgeEffect] = {}
        zoned: dict[tuple[str, str], list[tuple[str, str, EdgeEffect]]] = {}
        names = sorted(self.cluster.deployments)
        for fault in sorted(self.active.values(), key=lambda f: f.handle):
            if fault.kind not in ("network_delay", "network_loss", "partition"):
                continue
            peer = fault.params.get("peer")
            zone = str(fault.params.get("zone") or "")
            own = EdgeEffect(
                delay_ms=float(fault.params.get("delay_ms", 0.0)) if fault.kind == "network_delay" else 0.0,
                loss=float(fault.params.get("loss", 0.0)) if fault.kind == "network_loss" else 0.0,
                partitioned=fault.kind == "partition",
            )
            pairs = [((fault.target, p), "src") for p in names if peer in (None, p)]
            pairs += [((p, fault.target), "dst") for p in names if peer in (None, p)]
            for pair, side in pairs:
                if zone:
                    zoned.setdefault(pair, []).append((side, zone, own))
                    edges.setdefault(pair, NO_EFFECT)  # so the lookup is not skipped
                else:
                    edges[pair] = _combine(edges.get(pair, NO_EFFECT), own)
        self._edges = edges
        self._zoned = zoned


def _combine(a: EdgeEffect, b: EdgeEffect) -> EdgeEffect:
    """Two faults on one path: delays add, the worse loss counts, a partition wins."""
    return EdgeEffect(delay_ms=a.delay_ms + b.delay_ms, loss=max(a.loss, b.loss),
                      partitioned=a.partitioned or b.partitioned)
