"""Load and validate an application definition (``apps/<app>/app.yaml``).

Everything the twin knows about an application's shape comes from this file, so a mistake in it
must fail loudly at load time with the file and field named, not as a strange simulation later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_marathon import yamlio
from pytest_marathon.twin.quantities import QuantityError, parse_cpu, parse_memory

APPS_DIR = Path(__file__).parent / "apps"
# `consumer`: a Kafka consumer with no Service (accounting, fraud-detection); `kafka`, `postgres`,
# `flagd`, `memcached`, `mongodb` and `mysql` are servers the engine provides, like the redis `datastore`
WORKLOAD_KINDS = ("http", "grpc", "datastore", "consumer", "kafka", "postgres", "flagd", "memcached", "mongodb",
                  "mysql")
SERVER_KINDS = ("datastore", "kafka", "postgres", "flagd", "memcached", "mongodb", "mysql")
PROBE_TYPES = ("http", "grpc", "tcp")


class AppSpecError(ValueError):
    """app.yaml is malformed; the message names the file and the field."""


@dataclass(frozen=True)
class MethodSpec:
    name: str
    base_ms: float
    http_method: str = ""
    path: str = ""


@dataclass(frozen=True)
class DeploymentSpec:
    name: str
    image: str
    kind: str
    port: int
    language: str
    env: dict[str, str]
    secret_env: dict[str, tuple[str, str]]
    resources: dict[str, dict[str, str]]
    replicas: int
    probes: dict[str, dict[str, Any]]
    base_memory: int
    methods: dict[str, MethodSpec]
    rpc_service: str = ""
    health_paths: tuple[str, ...] = ()
    datastore: dict[str, Any] = field(default_factory=dict)
    # the container spec as upstream's manifest writes it (release/kubernetes-manifests.yaml):
    # its name (`server`; redis `redis`), the container port's name (only currencyservice's is
    # named), args, and the env entries' order (Secret references first, then `env` as written)
    container: str = "server"
    port_name: str = ""
    args: tuple[str, ...] = ()
    # the container's `command`, as upstream's manifest writes it: hotelReservation runs one image
    # holding every service's binary and picks one with `command: [profile]`
    # (xlab-uiuc/aiopslab-applications hotelReservation/kubernetes/*/*-deployment.yaml); empty: the
    # image's entrypoint, the service's own code (twin/programs.py)
    command: tuple[str, ...] = ()
    env_order: tuple[str, ...] = ()
    termination_grace_seconds: int = 30  # the API server's default when the manifest sets none
    # whether the service's code installs OpenTelemetry tracing (spans of its own and of its calls)
    traced: bool = True
    # a Kafka consumer's subscription: broker_env, topic, group, offset_reset, on_error
    consumer: dict[str, Any] = field(default_factory=dict)
    # `host:port` an init container waits to reach before the app container starts (the demo
    # chart's busybox `until nc -z -v -w30 <host> <port>; ... sleep 2; done`)
    init_wait: tuple[str, ...] = ()
    # the Services the program dials at addresses its source hard-codes (no env names them: Train
    # Ticket's `http://ts-<svc>:<port>` in each *ServiceImpl.java, its application.yml Mongo host);
    # they are call-graph edges as the env's address variables are
    calls: tuple[str, ...] = ()
    # how long the process takes from start to serving, [low, high] seconds (the twin's
    # calibration: a JVM with the OpenTelemetry agent starts slower than a Go binary)
    start_seconds: tuple[float, float] = (8.0, 12.0)
    # the env variable the program takes its listening port from
    port_env: str = "PORT"
    # other builds of the service pushed beside its image: tag -> a folder (relative to app.yaml)
    # whose files replace the service folder's (AIOpsLab's buggy yinfangchen/geo:app3)
    extra_images: dict[str, str] = field(default_factory=dict)
    # folders (relative to app.yaml) whose files every build of the service also holds, under the
    # service's own: the sources one upstream tree shares between its programs (socialNetwork's
    # src/ClientPool.h and ThriftClient.h are compiled into every service's binary)
    shared_code: tuple[str, ...] = ()

    @property
    def has_code(self) -> bool:
        """Whether the container runs service code (not a server the engine provides)."""
        return self.kind not in SERVER_KINDS


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    port: int
    target_port: int
    selector: str
    type: str = "ClusterIP"
    port_name: str = ""
    # Service.spec.trafficDistribution: "PreferClose" keeps traffic in the caller's zone while
    # that zone has a ready endpoint (Kubernetes 1.31+)
    traffic_distribution: str = ""


@dataclass(frozen=True)
class NodeSpec:
    name: str
    zone: str
    cpu: float
    memory: int


@dataclass(frozen=True)
class LoadTask:
    name: str
    weight: int
    steps: tuple[str, ...]


@dataclass(frozen=True)
class RequestTemplate:
    """One HTTP request of a load task (`load.tasks.<task>.requests[i]`): `{name}` placeholders in
    the path and body are filled from the task's draw of `load.values` (`{user}`: a fresh id per
    task, `{person}`: one of `load.people`, `{name:int}`: the value as an integer)."""

    method: str
    path: str
    body: Any = None


@dataclass(frozen=True)
class LoadSpec:
    users: int
    wait_seconds: tuple[float, float]
    on_start: tuple[str, ...]
    tasks: tuple[LoadTask, ...]
    products: tuple[str, ...]
    currencies: tuple[str, ...]
    quantity: tuple[int, int]
    checkout_form: dict[str, Any]
    # request-template form (an app whose load generator speaks HTTP paths, not route names)
    requests: dict[str, tuple[RequestTemplate, ...]] = field(default_factory=dict)
    repeat: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # task -> (low, high, first n)
    flag_of: dict[str, str] = field(default_factory=dict)  # task -> flag whose value is its count
    values: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    people: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class ZoneSpec:
    """Two or more zones: where the load enters, the one-way latency between zones, and whether
    each deployment's replicas are spread one per zone (topologySpreadConstraints on the zone)."""

    entry: str = ""
    cross_zone_ms: float = 0.0
    spread: bool = False


@dataclass(frozen=True)
class FlagSource:
    """Feature flags served by a flagd deployment from a ConfigMap's flag file."""

    deployment: str
    configmap: str
    key: str
    host_env: str
    port_env: str


@dataclass(frozen=True)
class AppSpec:
    app: str
    namespace: str
    version: str
    path: Path
    entry_deployment: str
    entry_service: str
    slow_seconds: float
    nodes: tuple[NodeSpec, ...]
    configmaps: dict[str, dict[str, str]]
    secrets: dict[str, dict[str, str]]
    deployments: dict[str, DeploymentSpec]
    services: dict[str, ServiceSpec]
    infrastructure: dict[str, dict[str, Any]]
    load: LoadSpec
    zones: ZoneSpec = ZoneSpec()
    flags: FlagSource | None = None
    #: How long the cluster runs before the load starts (the twin's BOOT_SECONDS when unset): the
    #: time `deploy` waits for every Deployment to be Available after the apply (deploy/cluster.py).
    boot_seconds: float | None = None

    @property
    def services_dir(self) -> Path:
        return self.path.parent / "services"


class _Reader:
    """Field access that reports the dotted path of whatever is missing or mistyped."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, problem: str) -> AppSpecError:
        return AppSpecError(f"{self.path}: field '{where}': {problem}")

    def get(self, mapping: Any, key: str, where: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
        if not isinstance(mapping, dict):
            raise self.fail(where.rsplit(".", 1)[0], "expected a mapping")
        if key not in mapping:
            if default is ...:
                raise self.fail(where, "missing")
            return default
        value = mapping[key]
        if not isinstance(value, kind) or isinstance(value, bool) and kind in (int, float, (int, float)):
            raise self.fail(where, f"expected {_kind_name(kind)}, got {type(value).__name__}")
        return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    if isinstance(kind, tuple):
        return " or ".join(k.__name__ for k in kind)
    return kind.__name__


def load_app(app: str, apps_dir: Path | None = None) -> AppSpec:
    """The spec of an application by name (``boutique``), from the shipped apps or `apps_dir`."""
    root = APPS_DIR if apps_dir is None else Path(apps_dir)
    path = root / app / "app.yaml"
    if not path.is_file():
        known = sorted(p.name for p in root.iterdir() if (p / "app.yaml").is_file()) if root.is_dir() else []
        raise AppSpecError(f"unknown app {app!r}; known apps: {', '.join(known) or 'none'}")
    return load_app_file(path)


def load_app_file(path: Path) -> AppSpec:
    r = _Reader(path)
    try:
        raw = yamlio.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise AppSpecError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise AppSpecError(f"{path}: expected a mapping at the top level")
    entry = r.get(raw, "entrypoint", "entrypoint", dict)
    deployments = {
        name: _deployment(r, name, body)
        for name, body in sorted(r.get(raw, "deployments", "deployments", dict).items())
    }
    services = {}
    for i, body in enumerate(r.get(raw, "services", "services", list)):
        where = f"services[{i}]"
        svc = ServiceSpec(
            name=r.get(body, "name", f"{where}.name", str),
            port=r.get(body, "port", f"{where}.port", int),
            target_port=r.get(body, "targetPort", f"{where}.targetPort", int),
            selector=r.get(body, "selector", f"{where}.selector", str),
            type=r.get(body, "type", f"{where}.type", str, "ClusterIP"),
            port_name=r.get(body, "port_name", f"{where}.port_name", str, ""),
            traffic_distribution=r.get(body, "trafficDistribution", f"{where}.trafficDistribution", str, ""),
        )
        if svc.selector not in deployments:
            raise r.fail(f"{where}.selector", f"no deployment named {svc.selector!r}")
        services[svc.name] = svc
    nodes = []
    for i, body in enumerate(r.get(raw, "nodes", "nodes", list)):
        where = f"nodes[{i}]"
        nodes.append(
            NodeSpec(
                name=r.get(body, "name", f"{where}.name", str),
                zone=r.get(body, "zone", f"{where}.zone", str),
                cpu=_quantity(r, parse_cpu, r.get(body, "cpu", f"{where}.cpu", (str, int)), f"{where}.cpu"),
                memory=_quantity(r, parse_memory, r.get(body, "memory", f"{where}.memory", str), f"{where}.memory"),
            )
        )
    if not nodes:
        raise r.fail("nodes", "at least one node is required")
    entry_deployment = r.get(entry, "deployment", "entrypoint.deployment", str)
    entry_service = r.get(entry, "service", "entrypoint.service", str)
    if entry_deployment not in deployments:
        raise r.fail("entrypoint.deployment", f"no deployment named {entry_deployment!r}")
    if entry_service not in services:
        raise r.fail("entrypoint.service", f"no service named {entry_service!r}")
    configmaps = {
        name: {str(k): str(v) for k, v in (body or {}).items()}
        for name, body in sorted(r.get(raw, "configmaps", "configmaps", dict, {}).items())
    }
    secrets = {
        name: {str(k): str(v) for k, v in (body or {}).items()}
        for name, body in sorted(r.get(raw, "secrets", "secrets", dict, {}).items())
    }
    for dep in deployments.values():
        for var, (secret, key) in dep.secret_env.items():
            if key not in secrets.get(secret, {}):
                raise r.fail(
                    f"deployments.{dep.name}.secret_env.{var}", f"secret {secret!r} has no key {key!r}"
                )
    zones = _zones(r, raw, nodes)
    if zones.spread:
        # every Service prefers its caller's zone (the sites' failover, docs/fidelity.md)
        services = {name: _prefer_close(svc) for name, svc in services.items()}
    flags = _flags(r, raw, deployments, configmaps)
    return AppSpec(
        app=r.get(raw, "app", "app", str),
        namespace=r.get(raw, "namespace", "namespace", str),
        version=r.get(raw, "version", "version", str, "v0"),
        path=path,
        entry_deployment=entry_deployment,
        entry_service=entry_service,
        slow_seconds=float(r.get(entry, "slow_seconds", "entrypoint.slow_seconds", (int, float), 2.5)),
        nodes=tuple(nodes),
        configmaps=configmaps,
        secrets=secrets,
        deployments=deployments,
        services=services,
        infrastructure=dict(r.get(raw, "infrastructure", "infrastructure", dict, {})),
        load=_load(r, r.get(raw, "load", "load", dict), deployments[entry_deployment], path.parent),
        boot_seconds=_boot_seconds(r, raw),
        zones=zones,
        flags=flags,
    )


def _prefer_close(svc: ServiceSpec) -> ServiceSpec:
    if svc.traffic_distribution:
        return svc
    return ServiceSpec(svc.name, svc.port, svc.target_port, svc.selector, svc.type, svc.port_name, "PreferClose")


def _zones(r: _Reader, raw: dict[str, Any], nodes: list[NodeSpec]) -> ZoneSpec:
    body = r.get(raw, "zones", "zones", dict, None)
    if body is None:
        return ZoneSpec()
    known = sorted({n.zone for n in nodes})
    entry = r.get(body, "entry", "zones.entry", str)
    if entry not in known:
        raise r.fail("zones.entry", f"no node is in zone {entry!r}; zones: {', '.join(known)}")
    return ZoneSpec(
        entry=entry,
        cross_zone_ms=float(r.get(body, "cross_zone_ms", "zones.cross_zone_ms", (int, float), 0.0)),
        spread=r.get(body, "spread", "zones.spread", bool, False),
    )


def _flags(r: _Reader, raw: dict[str, Any], deployments: dict[str, DeploymentSpec],
           configmaps: dict[str, dict[str, str]]) -> FlagSource | None:
    body = r.get(raw, "flags", "flags", dict, None)
    if body is None:
        return None
    source = FlagSource(
        deployment=r.get(body, "deployment", "flags.deployment", str),
        configmap=r.get(body, "configmap", "flags.configmap", str),
        key=r.get(body, "key", "flags.key", str),
        host_env=r.get(body, "host_env", "flags.host_env", str),
        port_env=r.get(body, "port_env", "flags.port_env", str),
    )
    if source.deployment not in deployments or deployments[source.deployment].kind != "flagd":
        raise r.fail("flags.deployment", f"no flagd deployment named {source.deployment!r}")
    if source.key not in configmaps.get(source.configmap, {}):
        raise r.fail("flags.configmap", f"configmap {source.configmap!r} has no key {source.key!r}")
    return source


def _quantity(r: _Reader, parse: Any, value: Any, where: str) -> Any:
    try:
        return parse(value)
    except QuantityError as exc:
        raise r.fail(where, str(exc)) from None


def _deployment(r: _Reader, name: str, body: Any) -> DeploymentSpec:
    w = f"deployments.{name}"
    kind = r.get(body, "kind", f"{w}.kind", str)
    if kind not in WORKLOAD_KINDS:
        raise r.fail(f"{w}.kind", f"expected one of {', '.join(WORKLOAD_KINDS)}, got {kind!r}")
    resources = r.get(body, "resources", f"{w}.resources", dict)
    limits = r.get(resources, "limits", f"{w}.resources.limits", dict)
    r.get(limits, "memory", f"{w}.resources.limits.memory", str)
    # the API server defaults a missing request to the limit; a missing CPU limit is no limit
    requests = r.get(resources, "requests", f"{w}.resources.requests", dict, None)
    if requests is None:
        resources = {**resources, "requests": {k: v for k, v in limits.items()}}
    for part in ("requests", "limits"):
        section = resources[part]
        cpu = r.get(section, "cpu", f"{w}.resources.{part}.cpu", str, None)
        if cpu is not None:
            _quantity(r, parse_cpu, cpu, f"{w}.resources.{part}.cpu")
        _quantity(
            r, parse_memory, r.get(section, "memory", f"{w}.resources.{part}.memory", str), f"{w}.resources.{part}.memory"
        )
    probes = r.get(body, "probes", f"{w}.probes", dict, {})
    for probe_kind, probe in probes.items():
        ptype = r.get(probe, "type", f"{w}.probes.{probe_kind}.type", str)
        if ptype not in PROBE_TYPES:
            raise r.fail(f"{w}.probes.{probe_kind}.type", f"expected one of {', '.join(PROBE_TYPES)}")
        r.get(probe, "port", f"{w}.probes.{probe_kind}.port", int)
        for i, header in enumerate(r.get(probe, "httpHeaders", f"{w}.probes.{probe_kind}.httpHeaders", list, [])):
            hw = f"{w}.probes.{probe_kind}.httpHeaders[{i}]"
            r.get(header, "name", f"{hw}.name", str)
            r.get(header, "value", f"{hw}.value", str)
    methods: dict[str, MethodSpec] = {}
    section = "routes" if kind == "http" else "methods"
    for mname, mbody in r.get(body, section, f"{w}.{section}", dict, {}).items():
        mw = f"{w}.{section}.{mname}"
        methods[mname] = MethodSpec(
            name=mname,
            base_ms=float(r.get(mbody, "base_ms", f"{mw}.base_ms", (int, float))),
            http_method=r.get(mbody, "method", f"{mw}.method", str, ""),
            path=r.get(mbody, "path", f"{mw}.path", str, ""),
        )
    if kind not in SERVER_KINDS and not methods:
        raise r.fail(f"{w}.{section}", "at least one is required")
    secret_env = {}
    for var, ref in r.get(body, "secret_env", f"{w}.secret_env", dict, {}).items():
        secret_env[var] = (
            r.get(ref, "secret", f"{w}.secret_env.{var}.secret", str),
            r.get(ref, "key", f"{w}.secret_env.{var}.key", str),
        )
    base_memory = _quantity(r, parse_memory, r.get(body, "base_memory", f"{w}.base_memory", str), f"{w}.base_memory")
    env = {str(k): str(v) for k, v in (r.get(body, "env", f"{w}.env", dict, {}) or {}).items()}
    args = r.get(body, "args", f"{w}.args", list, [])
    if not all(isinstance(a, str) for a in args):
        raise r.fail(f"{w}.args", "expected a list of strings")
    command = r.get(body, "command", f"{w}.command", list, [])
    if not all(isinstance(a, str) and a for a in command):
        raise r.fail(f"{w}.command", "expected a list of non-empty strings")
    return DeploymentSpec(
        name=name,
        image=r.get(body, "image", f"{w}.image", str),
        kind=kind,
        port=r.get(body, "port", f"{w}.port", int),
        language=r.get(body, "language", f"{w}.language", str, ""),
        env=env,
        secret_env=secret_env,
        resources={p: dict(resources[p]) for p in ("requests", "limits")},
        replicas=r.get(body, "replicas", f"{w}.replicas", int, 1),
        probes={k: dict(v) for k, v in probes.items()},
        base_memory=base_memory,
        methods=methods,
        rpc_service=r.get(body, "rpc_service", f"{w}.rpc_service", str, ""),
        health_paths=tuple(r.get(body, "health_paths", f"{w}.health_paths", list, [])),
        datastore=dict(r.get(body, "datastore", f"{w}.datastore", dict, {})),
        container=r.get(body, "container", f"{w}.container", str, "server"),
        port_name=r.get(body, "port_name", f"{w}.port_name", str, ""),
        args=tuple(args),
        command=tuple(command),
        termination_grace_seconds=r.get(body, "terminationGracePeriodSeconds",
                                         f"{w}.terminationGracePeriodSeconds", int, 30),
        traced=r.get(body, "traced", f"{w}.traced", bool, True),
        consumer=_consumer(r, body, kind, w),
        init_wait=tuple(str(a) for a in r.get(body, "init_wait", f"{w}.init_wait", list, [])),
        calls=tuple(str(a) for a in r.get(body, "calls", f"{w}.calls", list, [])),
        start_seconds=_pair(r, body, "start_seconds", w, (8.0, 12.0)),
        port_env=r.get(body, "port_env", f"{w}.port_env", str, "PORT"),
        extra_images=_extra_images(r, body, kind, w),
        shared_code=_shared_code(r, body, kind, w),
        # Secret references come first so literal values can refer to them with $(VAR)
        env_order=(*secret_env, *(k for k in env if k not in secret_env)),
    )


def _extra_images(r: _Reader, body: Any, kind: str, w: str) -> dict[str, str]:
    extra = r.get(body, "extra_images", f"{w}.extra_images", dict, {})
    if extra and kind in SERVER_KINDS:
        raise r.fail(f"{w}.extra_images", "only a deployment running service code has other builds")
    if not all(isinstance(k, str) and ":" in k and isinstance(v, str) and v for k, v in extra.items()):
        raise r.fail(f"{w}.extra_images", "expected image name:tag -> folder")
    return dict(extra)


def _shared_code(r: _Reader, body: Any, kind: str, w: str) -> tuple[str, ...]:
    shared = r.get(body, "shared_code", f"{w}.shared_code", list, [])
    if shared and kind in SERVER_KINDS:
        raise r.fail(f"{w}.shared_code", "only a deployment running service code builds shared sources")
    if not all(isinstance(v, str) and v and not v.startswith("/") and ".." not in v.split("/") for v in shared):
        raise r.fail(f"{w}.shared_code", "expected folders relative to app.yaml")
    missing = [v for v in shared if not (r.path.parent / v).is_dir()]
    if missing:
        raise r.fail(f"{w}.shared_code", f"no folder {missing[0]!r} beside app.yaml")
    return tuple(shared)


def _pair(r: _Reader, body: Any, key: str, w: str, default: tuple[float, float]) -> tuple[float, float]:
    value = r.get(body, key, f"{w}.{key}", list, list(default))
    if len(value) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value) \
            or not 0 <= value[0] <= value[1]:
        raise r.fail(f"{w}.{key}", "expected [low, high] seconds with 0 <= low <= high")
    return float(value[0]), float(value[1])


def _consumer(r: _Reader, body: Any, kind: str, w: str) -> dict[str, Any]:
    section = r.get(body, "consumer", f"{w}.consumer", dict, {})
    if kind != "consumer":
        if section:
            raise r.fail(f"{w}.consumer", "only a deployment of kind consumer subscribes")
        return {}
    for key in ("broker_env", "topic", "group"):
        r.get(section, key, f"{w}.consumer.{key}", str)
    if r.get(section, "offset_reset", f"{w}.consumer.offset_reset", str, "latest") not in ("earliest", "latest"):
        raise r.fail(f"{w}.consumer.offset_reset", "expected earliest or latest")
    if r.get(section, "on_error", f"{w}.consumer.on_error", str, "log") not in ("log", "exit"):
        raise r.fail(f"{w}.consumer.on_error", "expected log or exit")
    return {"offset_reset": "latest", "on_error": "log", **section}


def _load(r: _Reader, body: dict[str, Any], entry: DeploymentSpec, app_dir: Path) -> LoadSpec:
    if any("requests" in (t or {}) for t in r.get(body, "tasks", "load.tasks", dict).values()):
        return _request_load(r, body, app_dir)
    return _route_load(r, body, entry)


def _request_load(r: _Reader, body: dict[str, Any], app_dir: Path) -> LoadSpec:
    """A load mix written as HTTP requests (`method`, `path`, `body` templates)."""
    wait = r.get(body, "wait_seconds", "load.wait_seconds", list)
    tasks, requests, repeat, flag_of = [], {}, {}, {}
    for tname, tbody in r.get(body, "tasks", "load.tasks", dict).items():
        tw = f"load.tasks.{tname}"
        templates = []
        for i, req in enumerate(r.get(tbody, "requests", f"{tw}.requests", list)):
            method = r.get(req, "method", f"{tw}.requests[{i}].method", str)
            templates.append(RequestTemplate(method.upper(), r.get(req, "path", f"{tw}.requests[{i}].path", str),
                                             req.get("body")))
        requests[tname] = tuple(templates)
        rep = r.get(tbody, "repeat", f"{tw}.repeat", dict, None)
        if rep is not None:
            times = r.get(rep, "times", f"{tw}.repeat.times", list)
            repeat[tname] = (int(times[0]), int(times[1]), r.get(rep, "first", f"{tw}.repeat.first", int))
        flag = r.get(tbody, "flag", f"{tw}.flag", str, "")
        if flag:
            flag_of[tname] = flag
        tasks.append(LoadTask(tname, r.get(tbody, "weight", f"{tw}.weight", int), tuple(f"{tname}#{i}" for i in range(len(templates)))))
    on_start = tuple(r.get(body, "on_start", "load.on_start", list, []))
    for name in on_start:
        if name not in requests:
            raise r.fail("load.on_start", f"no task named {name!r}")
    values = {str(k): tuple(v) for k, v in r.get(body, "values", "load.values", dict, {}).items()}
    people: tuple[dict[str, Any], ...] = ()
    people_file = r.get(body, "people", "load.people", str, "")
    if people_file:
        path = app_dir / people_file
        if not path.is_file():
            raise r.fail("load.people", f"no file {path}")
        people = tuple(dict(p) for p in yamlio.safe_load(path.read_text()))
    if len(wait) != 2:
        raise r.fail("load.wait_seconds", "expected [low, high]")
    return LoadSpec(
        users=r.get(body, "users", "load.users", int),
        wait_seconds=(float(wait[0]), float(wait[1])),
        on_start=on_start,
        tasks=tuple(tasks),
        products=tuple(values.get("product", ())),
        currencies=(),
        quantity=(1, 1),
        checkout_form={},
        requests=requests,
        repeat=repeat,
        flag_of=flag_of,
        values=values,
        people=people,
    )


def _route_load(r: _Reader, body: dict[str, Any], entry: DeploymentSpec) -> LoadSpec:
    wait = r.get(body, "wait_seconds", "load.wait_seconds", list)
    quantity = r.get(body, "quantity", "load.quantity", list)
    tasks = []
    for tname, tbody in r.get(body, "tasks", "load.tasks", dict).items():
        steps = tuple(r.get(tbody, "steps", f"load.tasks.{tname}.steps", list))
        for step in steps:
            if step not in entry.methods:
                raise r.fail(f"load.tasks.{tname}.steps", f"no route handler named {step!r}")
        tasks.append(LoadTask(tname, r.get(tbody, "weight", f"load.tasks.{tname}.weight", int), steps))
    on_start = tuple(r.get(body, "on_start", "load.on_start", list, []))
    for name in on_start:
        if name not in {t.name for t in tasks}:
            raise r.fail("load.on_start", f"no task named {name!r}")
    if len(wait) != 2 or len(quantity) != 2:
        raise r.fail("load", "wait_seconds and quantity are [low, high] pairs")
    return LoadSpec(
        users=r.get(body, "users", "load.users", int),
        wait_seconds=(float(wait[0]), float(wait[1])),
        on_start=on_start,
        tasks=tuple(tasks),
        products=tuple(r.get(body, "products", "load.products", list)),
        currencies=tuple(r.get(body, "currencies", "load.currencies", list)),
        quantity=(int(quantity[0]), int(quantity[1])),
        checkout_form=dict(r.get(body, "checkout_form", "load.checkout_form", dict, {})),
    )


def _boot_seconds(r: _Reader, raw: dict[str, Any]) -> float | None:
    value = r.get(raw, "boot_seconds", "boot_seconds", (int, float), None)
    if value is None:
        return None
    if value <= 0:
        raise r.fail("boot_seconds", "must be positive")
    return float(value)
