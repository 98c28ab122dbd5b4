"""Write an app's templated fault catalog entries, and its code faults, from its definition.

Run from the repository root: `python fault_catalog/tools/generate.py --app astronomy`. The app's
deployments, env, limits, nodes, zones and load come from its `app.yaml`; what the app.yaml cannot
say (which load task goes through a service, whose failures a caller only warns about, who logs a
failed call and in which words, what an empty setting does) comes from the app's data file
`fault_catalog/<app>/generator.yaml`. No template names a service: a new app is data.

The Online Boutique catalog predates the data file and is still written by
`generate_boutique.py` (`--app boutique` runs it; its output is pinned byte for byte).

Code faults are data too: `fault_catalog/<app>/code-faults/*.yaml` lists edits of the app's service
sources (`code_faults_app.py` turns each into `patches/<id>.diff` and an entry). The tool rewrites
only files it generated (a manifest lists them) and keeps each entry's measured `scope`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from catalog_common import Writer, experiment, next_patch, restart, rollback

from pytest_marathon.twin.addresses import host_of, is_address_var

ROOT = Path(__file__).resolve().parents[2]


def app_file(app: str) -> Path:
    return ROOT / "pytest_marathon" / "twin" / "apps" / app / "app.yaml"


def out_dir(app: str) -> Path:
    return ROOT / "fault_catalog" / app


class Knowledge:
    """app.yaml plus the app's generator.yaml, with the questions the templates ask of them."""

    def __init__(self, app: dict[str, Any], know: dict[str, Any]) -> None:
        self.app = app
        self.k = know
        self.deps: dict[str, Any] = app["deployments"]
        self.zone: str | None = know.get("zones", {}).get("active")

    def get(self, *path: str, default: Any = None) -> Any:
        node: Any = self.k
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return default
            node = node[key]
        return node

    def kind(self, svc: str) -> str:
        return str(self.deps[svc].get("kind", "grpc"))

    def task(self, svc: str) -> str | None:
        return self.get("task_of", svc)

    def words(self, caller: str, callee: str, failure: str) -> str:
        """The words of `caller`'s client library for a call to `callee` failing with `failure`."""
        client = (self.get("clients", caller, self.kind(callee))
                  or self.get("language_clients", self.deps[caller].get("language"), self.kind(callee), default=""))
        return str(self.get("dial_words", client, failure, default=""))

    def reporter(self, caller: str, callee: str) -> str:
        """The service whose log shows `caller`'s failed call to `callee`."""
        return str(self.get("logged_by", caller, self.kind(callee))
                   or self.get("reporter", caller, default=caller))

    def reported(self, caller: str, callee: str, failure: str) -> tuple[str, str]:
        """(service, text) of the log line that shows `caller`'s failed call to `callee`."""
        dropped = self.get("cause_dropped", caller, callee)
        return self.reporter(caller, callee), dropped or self.words(caller, callee, failure)

    def consumer_text(self, consumer: str, callee: str, failure: str = "refused") -> str:
        """The error line a consumer logs when `callee` fails it (one text, or one per failure)."""
        text = self.get("consumer_failures", consumer, self.kind(callee), default="")
        return str(text.get(failure, "") if isinstance(text, dict) else text)

    def address(self, svc: str) -> str:
        """How callers dial `svc` (host:port of its Service)."""
        for service in self.app.get("services", []):
            if service["name"] == svc:
                return f"{svc}:{service['port']}"
        return f"{svc}:{self.deps[svc]['port']}"

    def probe(self, svc: str, signature: list[str] | None = None, contains: str = "") -> dict[str, Any]:
        """The load task through `svc`, failing on this fault's evidence; a consumer's error log
        for what only the consumers reach; the rollout otherwise."""
        task = self.task(svc)
        if task is not None:
            probe: dict[str, Any] = {"kind": "request", "task": task}
            return probe | {"signature": signature} if signature else probe
        if self.kind(svc) == "consumer":
            probe = {"kind": "no_error_logs", "service": svc, "window": int(self.get("consumers_probe_window", default=120))}
            return probe | {"contains": contains} if contains else probe
        return {"kind": "deployment_ready", "deployment": svc}

    def path_probe(self, caller: str, callee: str, signature: list[str]) -> dict[str, Any]:
        """The request that takes the caller -> callee hop: the entry point's calls are told apart
        by the callee's task, a backend's by its own."""
        return self.probe(callee if caller in self.get("front", default=[]) else caller, signature)

    def edges(self) -> list[tuple[str, str, str, str]]:
        """(caller, var, value, callee) for every address setting that names a deployment; a
        `<X>_PORT` next to an `<X>_HOST` edge is an edge too (Envoy's templated clusters)."""
        never = set(self.get("never", default=[]))
        out = []
        for caller, dep in sorted(self.deps.items()):
            env = dep.get("env", {})
            tolerated = set(self.get("tolerated", caller, default=[]))
            for var, value in sorted(env.items()):
                if var in never or var in tolerated:
                    continue
                if is_address_var(var):
                    callee = host_of(str(value))
                elif var.endswith("_PORT") and var.removesuffix("_PORT") + "_HOST" in env:
                    callee = host_of(str(env[var.removesuffix("_PORT") + "_HOST"]))
                else:
                    continue
                if callee in self.deps and callee != caller:
                    out.append((caller, var, str(value), callee))
        return out

    def caller_of(self, svc: str) -> str:
        """The first service that dials `svc`, request paths before consumers (itself when none does)."""
        named = self.get("caller_of", svc)
        if named:  # addresses hard-coded in the source: the data names the caller the load goes through
            return str(named)
        front = self.get("front", default=[])
        callers = sorted({c for c, _v, _val, callee in self.edges() if callee == svc},
                         key=lambda c: (self.kind(c) == "consumer", c not in front, c))
        return callers[0] if callers else svc

    def unreachable(self, svc: str, failure: str = "refused") -> tuple[dict[str, Any], tuple[str, str]]:
        """Probe and log line of `svc` answering no one: `refused` (no ready endpoint, nothing
        listening) or `timeout` (its node is gone while its endpoint is still listed)."""
        store = self.get("store_failures", svc) or self.store_user_failure(svc, failure)
        if store:
            log = (store["service"], store["message"])
            if "task" in store:
                return {"kind": "request", "task": store["task"], "signature": [store["message"]]}, log
            return {"kind": "no_error_logs", "service": log[0], "window": 120, "contains": log[1]}, log
        caller = self.caller_of(svc)
        if caller == svc:
            return {"kind": "deployment_ready", "deployment": svc}, (svc, "Back-off")
        # A failed call to `svc` also reads `-> svc:port` when `svc` answered an error of its own
        # callees' making; an app that names the refusal words (`refused_signature`) narrows the
        # probe to `svc` itself being unreachable, so a fault further down the path never holds
        # this probe unhealthy after its own repair.
        refusal = self.get("refused_signature") if failure == "refused" else None
        signature = [f"-> {self.address(svc)}", *([str(refusal)] if refusal else [])]
        return self.path_probe(caller, svc, signature), self.reported(caller, svc, failure)

    def store_user(self, store: str) -> str | None:
        """The service whose `store_settings` name `store` (the first, by name)."""
        users = sorted(s for s, conf in self.get("store_settings", default={}).items() if conf["store"] == store)
        return users[0] if users else None

    def store_user_failure(self, store: str, failure: str) -> dict[str, str] | None:
        """`store_failures` derived from `store_settings`: the user's request fails with its store
        client's words for the store's own address."""
        user = self.store_user(store)
        if user is None or self.task(user) is None:
            return None
        words = self.get("store_words", self.kind(store), default={})
        text = str(words[failure]).format(host=store, port=self.deps[store]["port"])
        return {"task": str(self.task(user)), "service": user, "message": text}

    def scoped(self) -> dict[str, str]:
        return {"zone": self.zone} if self.zone else {}


def with_host(value: str, old: str, new: str) -> str:
    """`value` with its host `old` replaced (`cart:8080`, `http://shipping:8080`, both DSN forms)."""
    for before, after in ((f"//{old}:", f"//{new}:"), (f"//{old}/", f"//{new}/"), (f"@{old}/", f"@{new}/"),
                          (f"@{old}:", f"@{new}:"), (f"Host={old};", f"Host={new};")):
        if before in value:
            return value.replace(before, after, 1)
    if value.startswith(f"{old}:") or value == old:
        return new + value[len(old):]
    raise ValueError(f"cannot find host {old!r} in {value!r}")


def port_of(value: str) -> int | None:
    """The port an address names (None for a bare host, a DSN without one)."""
    if "://" in value:
        return urlsplit(value).port
    head = value.split(",", 1)[0]
    if "=" in head or ":" not in head:
        return None
    return int(head.rsplit(":", 1)[1])


def change_entry(svc: str, *, category: str, probe: dict[str, Any], artifact: str, log: tuple[str, str],
                 cause: str, injection: dict[str, Any], recovery: str) -> dict[str, Any]:
    """A release of `svc` that carries the fault; rolling it back repairs it."""
    return {
        "category": category,
        "mechanism": "change",
        "target": svc,
        "culprits": [svc],
        "probe": probe,
        "artifact": artifact,
        "aliases": [],
        "log": {"service": log[0], "message": log[1]},
        "change_cause": cause,
        "injection": injection,
        "recovery": recovery,
        "remedy": rollback(svc),
    }


def config_entry(caller: str, var: str, *, probe: dict[str, Any], log: tuple[str, str], cause: str,
                 value: str | None, recovery: str, category: str = "configuration") -> dict[str, Any]:
    """A changed setting; `value` None removes the variable (the services test for an unset one)."""
    return change_entry(caller, category=category, probe=probe, artifact=f"env:{caller}/{var}", log=log,
                        cause=cause, injection={"env": {var: value}}, recovery=recovery)


def edge_evidence(k: Knowledge, caller: str, var: str, callee: str, failure: str,
                  dialled: str) -> tuple[dict[str, Any], tuple[str, str]]:
    """Probe and log line of a call from `caller` through `var` to an address that fails."""
    stop = k.get("checked_at_start", caller, var)
    if stop:  # the new pod stops at start while the old one keeps serving
        return {"kind": "deployment_ready", "deployment": caller}, (caller, stop)
    if k.kind(caller) == "consumer":
        text = k.consumer_text(caller, callee, failure)
        return k.probe(caller, contains=text), (caller, text)
    if k.kind(callee) in ("datastore", "postgres", "kafka"):
        signature = [k.words(caller, callee, failure)]  # a store client names no dialled address
    else:
        signature = [f"{caller} -> {dialled}"]
    return k.path_probe(caller, callee, signature), k.reported(caller, callee, failure)


def configuration(w: Writer, k: Knowledge) -> None:
    """Address settings per caller -> callee edge: a wrong host, a wrong port, a cleared value, a
    neighbouring line's address pasted in; DSN edits; listener ports; memory limits."""
    edges = k.edges()
    for caller, var, value, callee in edges:
        short = var.lower().replace("_", "-")
        restore = f"Restore {var}={value}"
        if not is_address_var(var):  # a port next to its host variable
            host = host_of(k.deps[caller]["env"][var.removesuffix("_PORT") + "_HOST"])
            new_port = str(int(value) + 1)
            probe, log = edge_evidence(k, caller, var, callee, "timeout", f"{host}:{new_port}")
            w.entry(f"cfg-port-{caller}-{short}", config_entry(
                caller, var, probe=probe, log=log, value=new_port, recovery=restore,
                cause=f"Use the new {callee} port in {var}"))
            continue
        alias = f"{callee}-primary"
        port = port_of(value)
        probe, log = edge_evidence(k, caller, var, callee, "nxdomain", f"{alias}:{port}" if port else alias)
        w.entry(f"cfg-host-{caller}-{short}", config_entry(
            caller, var, probe=probe, log=log, value=with_host(value, callee, alias), recovery=restore,
            cause=f"Point {var} at the {alias} site alias"))
        if port is not None:
            probe, log = edge_evidence(k, caller, var, callee, "timeout", f"{callee}:{port + 1}")
            w.entry(f"cfg-port-{caller}-{short}", config_entry(
                caller, var, probe=probe, log=log, value=value.replace(f"{callee}:{port}", f"{callee}:{port + 1}", 1),
                recovery=restore, cause=f"Use the new {callee} port in {var}"))
        cleared = k.get("startup_failures", caller, var)
        default = k.get("code_defaults", caller, var)
        if cleared:
            probe, log = {"kind": "deployment_ready", "deployment": caller}, (caller, cleared)
        elif default:  # the code's own default address: a call to somewhere else
            probe = k.path_probe(caller, callee, [f"{caller} -> {host_of(default['value'])}:{port_of(default['value'])}"])
            log = (default["log"]["service"], default["log"]["message"])
        if cleared or default:
            w.entry(f"cfg-cleared-{caller}-{short}", config_entry(
                caller, var, probe=probe, log=log, value=None, recovery=restore,
                cause=f"Move {var} to the shared service defaults"))
        # the neighbouring line's address pasted in: it connects, to a server of another API
        others = [(v2, val2) for c2, v2, val2, callee2 in edges
                  if c2 == caller and v2 != var and is_address_var(v2) and k.kind(callee2) == k.kind(callee)
                  and k.kind(callee) in ("grpc", "http")]
        if others:
            pasted = others[0][1]
            probe = k.path_probe(caller, callee, [f"{caller} -> {host_of(pasted)}:{port_of(pasted)}"])
            log = (k.reporter(caller, callee),
                   k.get("cause_dropped", caller, callee) or k.words(caller, callee, "unimplemented"))
            w.entry(f"cfg-pasted-{caller}-{short}", config_entry(
                caller, var, probe=probe, log=log, value=pasted, recovery=restore,
                cause=f"Sync {var} with the service address list"))
    consumer_groups(w, k)
    database_settings(w, k)
    listeners(w, k)
    store_settings(w, k)
    memory_limits(w, k)
    liveness_probes(w, k)


def consumer_groups(w: Writer, k: Knowledge) -> None:
    """A consumer's group renamed in a release: the new group has no committed offset, so it
    starts at its `offset_reset` end - an `earliest` consumer re-reads every retained record, a
    `latest` one skips what arrived meanwhile. Only where the group is a setting
    (app.yaml `consumer.group_env`) and the consumer's reaction to it is known (generator.yaml
    `consumer_failures.<svc>.regroup`)."""
    for svc, dep in sorted(k.deps.items()):
        conf = dep.get("consumer") or {}
        var, text = conf.get("group_env"), k.get("consumer_failures", svc, "regroup")
        if not var or not text:
            continue
        group = str(dep.get("env", {}).get(var, conf.get("group", svc)))
        w.entry(f"cfg-group-{svc}", config_entry(
            svc, var, probe=k.probe(svc, contains=text), log=(svc, text), value=f"{group}-v2",
            recovery=f"Restore {var}={group}", cause=f"Version the {svc} consumer group with the order schema"))


def database_settings(w: Writer, k: Knowledge) -> None:
    """A DSN edited by hand: the password of another environment, another user, another database
    name. Both forms (lib/pq URL, Npgsql keywords) keep their syntax."""
    pg = k.get("postgres")
    if not pg:
        return
    server = next(n for n in sorted(k.deps) if k.kind(n) == "postgres")
    for svc in pg["clients"]:
        value = k.deps[svc]["env"]["DB_CONNECTION_STRING"]
        stop = k.get("checked_at_start", svc, "DB_CONNECTION_STRING")

        def evidence(text: str, svc: str = svc, stop: str | None = stop) -> tuple[dict[str, Any], tuple[str, str]]:
            if stop:  # the start-up ping fails: the new pod exits, the old one keeps serving
                return {"kind": "deployment_ready", "deployment": svc}, (svc, text)
            return k.probe(svc, contains=text), (svc, text)

        restore = "Restore DB_CONNECTION_STRING to the chart's value"
        user, password, database = pg["user"], pg["password"], pg["database"]
        variants = [
            ("auth-db-password", "authentication",
             value.replace(f":{password}@", f":{password}-staging@").replace(f"Password={password};", f"Password={password}-staging;"),
             pg["wrong_password"], "Take the database credentials from the staging values file"),
            ("auth-db-user", "authentication",
             value.replace(f"//{user}:", f"//{database}:").replace(f"Username={user};", f"Username={database};"),
             pg["wrong_password"].replace(f'"{user}"', f'"{database}"'), "Name the database user after the database"),
            ("auth-db-password-cleared", "authentication",
             value.replace(f":{password}@", "@").replace(f"Password={password};", ""),
             pg.get("missing_password", {}).get(svc, pg["wrong_password"]),
             "Read the database password from PGPASSWORD, not the connection string"),
            ("db-name", "database-network",
             value.replace(f"/{database}?", f"/{database}_demo?").replace(f"Database={database}", f"Database={database}_demo"),
             pg["missing_database"].format(database=f"{database}_demo"),
             f"Use the {database}_demo database of the shared {server} layout"),
        ]
        for prefix, category, changed, text, cause in variants:
            if changed == value:
                raise ValueError(f"{prefix}-{svc}: the DSN {value!r} has no {user}/{password}/{database} to change")
            probe, log = evidence(text)
            w.entry(f"{prefix}-{svc}", config_entry(svc, "DB_CONNECTION_STRING", probe=probe, log=log, value=changed,
                                                    recovery=restore, cause=cause, category=category))


def listeners(w: Writer, k: Knowledge) -> None:
    """The listener moved (the Service still targets the chart's port), or its variable emptied."""
    for svc, var in sorted(k.get("listener_env", default={}).items()):
        env = k.deps[svc].get("env", {})
        if var not in env:
            continue
        port = int(k.deps[svc]["port"])
        new = str(env[var]).replace(str(port), str(port + 10))
        caller = k.caller_of(svc)
        w.entry(f"cfg-listener-port-{svc}", config_entry(
            svc, var, probe=k.path_probe(caller, svc, [f"-> {k.address(svc)}"]),
            log=k.reported(caller, svc, "refused"), value=new, recovery=f"Restore {var}={env[var]}",
            cause=f"Serve {svc} on {port + 10} to free {port} for the metrics sidecar"))
        cleared = k.get("startup_failures", svc, var)
        if cleared:
            w.entry(f"cfg-cleared-{svc}-{var.lower().replace('_', '-')}", config_entry(
                svc, var, probe={"kind": "deployment_ready", "deployment": svc}, log=(svc, cleared),
                value=None, recovery=f"Restore {var}={env[var]}", cause=f"Move {var} to the shared service defaults"))


def store_settings(w: Writer, k: Knowledge) -> None:
    """A service's datastore connection settings, read from the environment over the program's
    built-in file (generator.yaml `store_settings`: per service its store and the variables its
    framework binds): the host pointed at a site alias that does not resolve, the port at the
    next one (nothing listens there: the driver's connect is refused until its selection
    timeout). The store client's words name the failure; the request that reads the store
    fails with them."""
    for svc, conf in sorted(k.get("store_settings", default={}).items()):
        store, host_var, port_var = conf["store"], conf["host_env"], conf["port_env"]
        port = int(k.deps[store]["port"])
        alias = f"{store}-primary"
        words = k.get("store_words", k.kind(store), default={})
        for entry_id, var, value, failure, cause, recovery in (
                (f"cfg-store-host-{svc}", host_var, alias, "nxdomain", f"Point {host_var} at the {alias} site alias",
                 f"Remove {host_var} (the built-in host {store})"),
                (f"cfg-store-port-{svc}", port_var, str(port + 1), "refused", f"Use the new {store} port in {port_var}",
                 f"Remove {port_var} (the built-in port {port})")):
            text = str(words[failure]).format(host=value if var == host_var else store, port=value if var == port_var else port)
            w.entry(entry_id, config_entry(svc, var, probe=k.probe(svc, [text]), log=(svc, text), value=value,
                                           recovery=recovery, cause=cause))


def restarting_change(w: Writer, entry_id: str, svc: str, *, artifact: str, message: str, cause: str,
                      injection: dict[str, Any], recovery: str) -> None:
    """A setting change whose containers keep being killed: the rollout never completes (its probe)
    and the target's own events or log carry `message`; rolling back repairs it."""
    w.entry(entry_id, change_entry(svc, category="configuration", probe={"kind": "deployment_ready", "deployment": svc},
                                   artifact=artifact, log=(svc, message), cause=cause, injection=injection,
                                   recovery=recovery))


def memory_limits(w: Writer, k: Knowledge) -> None:
    """A limit `right-sized` below the working set (app.yaml base_memory): the new pod is
    OOMKilled and crash-loops while the old one keeps serving."""
    for svc, dep in sorted(k.deps.items()):
        base = int(str(dep["base_memory"]).removesuffix("Mi"))
        trimmed = f"{max(1, base * 3 // 4)}Mi"
        restarting_change(w, f"cfg-memory-limit-{svc}", svc, artifact=f"limits:{svc}/memory",
                          message="Back-off restarting failed container",
                          cause=f"Right-size the {svc} memory limit to {trimmed} from usage data",
                          injection={"resources": {"limits.memory": trimmed}},
                          recovery=f"Restore the memory limit {dep['resources']['limits']['memory']}")


def liveness_probes(w: Writer, k: Knowledge) -> None:
    """The chart sets no probes (facts §2): a change that adds a liveness probe on a port the
    program does not listen on (the metrics port the team meant to expose next) makes the kubelet
    kill every container after three failed checks, in both sites at once."""
    for svc in k.get("liveness_probe", default=[]):
        dep = k.deps[svc]
        port = int(dep["port"])
        probe = {"type": "tcp", "port": port + 1, "initialDelaySeconds": 10, "periodSeconds": 10,
                 "failureThreshold": 3}
        restarting_change(w, f"cfg-liveness-{svc}", svc, artifact=f"probe:{svc}/liveness",
                          message="Liveness probe failed",
                          cause=f"Add a liveness check to {svc} (TCP, the metrics port)",
                          injection={"probes": {"liveness": probe}}, recovery="Remove the liveness probe")


def deployment(w: Writer, k: Knowledge) -> None:
    """Releases: a tag never published (with Recreate, so no old pod is left serving), a sibling's
    image shipped in the manifest (a gRPC server of another API)."""
    names = sorted(k.deps)
    registry = k.get("registry", default="localhost:")
    for svc in names:
        image = k.deps[svc]["image"]
        repo, _, tag = image.rpartition(":")
        if not repo.startswith(registry) or svc in k.get("no_outage", default=[]):
            continue  # public images (valkey, postgres, flagd) are pinned by the chart, not released
        caller = k.caller_of(svc)
        if caller == svc:  # nothing calls it (a consumer): its pods never start
            probe, log = {"kind": "deployment_ready", "deployment": svc}, (svc, "ImagePullBackOff")
        else:
            probe, log = k.unreachable(svc)
        w.entry(f"dep-image-tag-{svc}", change_entry(
            svc, category="deployment", probe=probe, artifact=f"image:{svc}", log=log,
            cause=f"Release {svc} {next_patch(tag)}; switch to Recreate so two versions never serve at once",
            injection={"image": f"{repo}:{next_patch(tag)}", "strategy": {"type": "Recreate"}},
            recovery=f"Roll back to the image {image}"))
        same = [n for n in names if k.kind(n) == k.kind(svc) and k.deps[n]["image"].startswith(registry)]
        # another API answers: UNIMPLEMENTED to a gRPC caller, 404 to an HTTP one, which only a
        # caller that fails on a non-200 shows (not the proxy, which passes the 404 on)
        wrong_api = k.get("cause_dropped", caller, svc) or k.words(caller, svc, "unimplemented")
        if k.kind(svc) in ("grpc", "http") and caller != svc and wrong_api:
            sibling = same[(same.index(svc) + 1) % len(same)]
            probe = k.path_probe(caller, svc, [f"-> {k.address(svc)}"])
            log = (k.reporter(caller, svc), wrong_api)
            # the sibling's program stops at start when the pod's env lacks a variable it requires:
            # the new pod crash-loops and the rollout stalls while the old pods serve on
            env = k.deps[svc].get("env", {})
            missing = [text for var, text in (k.get("startup_failures", sibling) or {}).items() if var not in env]
            if missing:
                probe, log = {"kind": "deployment_ready", "deployment": svc}, (svc, missing[0])
            w.entry(f"dep-wrong-image-{svc}", change_entry(
                svc, category="deployment", probe=probe, artifact=f"image:{svc}", log=log,
                cause=f"Bump {svc} to the {next_patch(tag)} release image",
                injection={"image": k.deps[sibling]["image"]}, recovery=f"Restore the image {image}"))


class Direct:
    """Chaos actions; zone-scoped ones carry `zone` (the active site's pods only)."""

    def __init__(self, w: Writer, k: Knowledge) -> None:
        self.w, self.k = w, k

    def add(self, entry_id: str, category: str, kind: str, target: str, title: str, *, log: tuple[str, str],
            artifact: str, remedy: Any, probe: dict[str, Any], aliases: list[str] | None = None,
            culprits: list[str] | None = None, **params: Any) -> None:
        self.w.entry(entry_id, {
            "category": category,
            "mechanism": "direct",
            "target": target,
            "culprits": culprits or [target],
            "probe": probe,
            "artifact": artifact,
            "aliases": aliases or [],
            "log": {"service": log[0], "message": log[1]},
            "recovery": f"Stop the {kind.replace('_', ' ')} on {target}",
            "remedy": remedy,
        }, experiment(title, kind, target, **params))

    def where(self) -> str:
        return f" in {self.k.zone}" if self.k.zone else ""

    def run(self) -> None:
        k, add, zone = self.k, self.add, self.k.scoped()
        every_zone = bool(k.get("pod_kill_all_zones", default=False))
        for svc in k.get("pod_kill", default=[]):
            replicas = int(k.deps[svc].get("replicas", 1))
            kill = {"count": replicas} if every_zone else {"count": 1, **zone}
            add(f"infra-pod-kill-{svc}", "infrastructure", "pod_kill", svc,
                f"Kill the {svc} pods" if every_zone else f"Kill the {svc} pod{self.where()}",
                log=k.unreachable(svc)[1], probe=k.unreachable(svc)[0],
                artifact=f"replicas:{svc}", aliases=[f"pod:{svc}"],
                # more replicas than the kills take ride them out
                remedy=[{"tool": "scale_service", "args": {"service": svc, "replicas": 2 * replicas}}],
                interval=60, **kill)
        skip = set(k.get("memory_hog_skip", default=[]))
        for svc, dep in sorted(k.deps.items()):
            if svc not in skip:
                add(f"infra-memory-{svc}", "infrastructure", "memory_hog", svc, f"Memory pressure in {svc}{self.where()}",
                    log=(svc, "Back-off restarting failed container"), probe={"kind": "deployment_ready", "deployment": svc},
                    artifact=f"limits:{svc}/memory", aliases=[f"pod:{svc}"], size=dep["resources"]["limits"]["memory"],
                    remedy=[{"tool": "update_config", "args": {"service": svc, "resources": {"limits.memory": "2Gi"}}}],
                    **zone)
        nodes = [f"node:{n['name']}" for n in k.app.get("nodes", []) if not k.zone or n.get("zone") == k.zone]
        for svc in k.get("node_failure", default=[]):
            # until the node-monitor grace period ends the pod stays in the endpoints and nothing
            # answers its SYN: the callers' dials time out, then the standby zone takes over
            add(f"infra-node-{svc}", "infrastructure", "node_failure", svc, f"The node hosting {svc}{self.where()} fails",
                log=k.unreachable(svc, "timeout")[1], probe=k.unreachable(svc, "timeout")[0],
                artifact=f"pod:{svc}", aliases=nodes, remedy=restart(svc), **zone)
        for svc, timeout in sorted(k.get("slow", default={}).items()):
            late = k.get("timeouts", timeout)
            add(f"dep-slow-{svc}", "dependency", "network_delay", svc, f"{svc} answers slowly{self.where()}",
                log=tuple(late["log"]), probe=k.path_probe(k.caller_of(svc), svc, [k.address(svc), "slow"]),
                artifact=f"pod:{svc}", aliases=[f"network:{svc}"], remedy="none", delay_ms=late["delay_ms"], **zone)
        for caller, callee, timeout in k.get("delay_pairs", default=[]):
            late = k.get("timeouts", timeout)
            add(f"net-delay-{caller}-{callee}", "database-network", "network_delay", callee,
                f"Network delay between {caller} and {callee}{self.where()}", log=tuple(late["log"]),
                probe=k.path_probe(caller, callee, [f"{caller} -> {k.address(callee)}", "slow network"]),
                artifact=f"network:{callee}", culprits=[callee], remedy="none", delay_ms=late["delay_ms"],
                peer=caller, **zone)
        for caller, callee, *timeout in k.get("partitions", default=[]):
            if timeout:  # the call hangs until a hop's timeout answers for it
                probe = k.path_probe(caller, callee, [f"{caller} -> {k.address(callee)}"])
                log = tuple(k.get("timeouts", timeout[0], "log"))
            elif k.kind(caller) == "consumer":
                text = k.consumer_text(caller, callee, "timeout")
                probe, log = k.probe(caller, contains=text), (caller, text)
            else:
                probe = k.path_probe(caller, callee, [f"{caller} -> {k.address(callee)}"])
                log = k.reported(caller, callee, "canceled")
            add(f"net-partition-{caller}-{callee}", "database-network", "partition", callee,
                f"Partition between {caller} and {callee}{self.where()}", log=log, probe=probe,
                artifact=f"network:{callee}", culprits=[callee], remedy="none", peer=caller, **zone)
        self.datastores()

    def datastores(self) -> None:
        """valkey, Kafka and PostgreSQL: an outage, memory, a rotated password."""
        k, add, zone = self.k, self.add, self.k.scoped()
        for svc in sorted(k.deps):
            kind = k.kind(svc)
            if kind not in ("datastore", "kafka", "postgres", *k.get("outage_kinds", default=[])):
                continue
            user = k.caller_of(svc)
            probe, log = k.unreachable(svc)
            # no tool brings a stopped store back: the standby zone's copy serves (without the
            # active site's data) until the outage ends
            add(f"dep-{svc}-outage", "dependency", "datastore_outage", svc, f"{svc} outage{self.where()}",
                log=log, probe=probe, artifact=f"pod:{svc}", remedy="none", **zone)
            if kind == "datastore":
                add(f"db-{svc}-maxmemory", "database-network", "redis_maxmemory", svc, f"{svc} maxmemory lowered",
                    log=(k.reporter(user, svc), "OOM command not allowed"),
                    probe={"kind": "request", "task": k.get("write_task", svc), "signature": ["OOM command not allowed"]},
                    artifact=f"pod:{svc}", remedy=restart(svc), maxmemory="512Ki", **zone)
        pg = k.get("postgres")
        if pg:
            server = next(n for n in sorted(k.deps) if k.kind(n) == "postgres")
            # the password changed in the server by hand (ALTER ROLE) while every client's DSN keeps
            # the old one; without a volume a restarted server runs its init script again
            # what the load sees: product-catalog answers NotFound for any database error (§4.9)
            probe, log = k.unreachable(server)
            self.w.entry("auth-postgres-rotated", {
                "category": "authentication",
                "mechanism": "direct",
                "target": server,
                "culprits": [server],
                "probe": probe,
                "artifact": f"pod:{server}",
                "aliases": [f"env:{c}/DB_CONNECTION_STRING" for c in pg["clients"]],
                "log": {"service": log[0], "message": log[1]},
                "recovery": f"Restore the {pg['user']} password",
                "remedy": restart(server),
            }, experiment(f"{pg['user']} password rotated", "credential_rotation", server,
                          user=pg["user"], new_password=f"{pg['password']}-2025-q3"))


def access_control(w: Writer, k: Knowledge) -> None:
    """A store turned to enforce access control by a settings change whose clients connect without
    credentials (generator.yaml `access_control`: per store kind the settings that switch it on and
    the words its clients fail with): every command of the store's users is refused until the
    change is rolled back."""
    for kind, conf in sorted(k.get("access_control", default={}).items()):
        for store in sorted(n for n in k.deps if k.kind(n) == kind):
            user = k.store_user(store)
            if user is None or k.task(user) is None:
                continue
            text = str(conf["message"])
            w.entry(f"auth-{store}-access-control", change_entry(
                store, category="authentication", probe=k.probe(user, [text]), artifact=f"env:{store}/{next(iter(conf['env']))}",
                log=(user, text), cause=str(conf["cause"]).format(store=store),
                injection={"env": {str(var): str(value) for var, value in conf["env"].items()}},
                recovery=f"Remove {', '.join(conf['env'])} from {store}"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--app", required=True)
    args = parser.parse_args(argv)
    if args.app == "boutique":
        import generate_boutique

        generate_boutique.main()
        return 0
    out = out_dir(args.app)
    know = yaml.safe_load((out / "generator.yaml").read_text())
    k = Knowledge(yaml.safe_load(app_file(args.app).read_text()), know)
    w = Writer.start(out)
    w.excluded = {str(k_): str(v) for k_, v in (know.get("excluded") or {}).items()}
    w.unreached = set(know.get("unreached") or [])
    configuration(w, k)
    deployment(w, k)
    access_control(w, k)
    Direct(w, k).run()
    import code_faults_app

    problems = code_faults_app.convert(args.app, w)
    w.finish()
    print(f"wrote {len(w.written)} entries")
    for problem in problems:
        print("SKIPPED", problem)
    return 0


if __name__ == "__main__":
    sys.exit(main())
