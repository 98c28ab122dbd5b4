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
WORKLOAD_KINDS = ("http", "grpc", "datastore", "consumer", "kafka", "postgres", "flagd")
#: kinds the twin runs without service code (their servers are the twin's own)
SERVER_KINDS = ("datastore", "kafka", "postgres", "flagd")
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
    env_order: tuple[str, ...] = ()
    termination_grace_seconds: int = 30  # the API server's default when the manifest sets none
    # whether the service's code installs OpenTelemetry tracing (spans of its own and of its calls)
    traced: bool = True
    # kind `consumer`: {broker_env, topic, group, offset_reset, on_error} (the contract's fields)
    consumer: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    port: int
    target_port: int
    selector: str
    type: str = "ClusterIP"
    port_name: str = ""


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
class LoadSpec:
    users: int
    wait_seconds: tuple[float, float]
    on_start: tuple[str, ...]
    tasks: tuple[LoadTask, ...]
    products: tuple[str, ...]
    currencies: tuple[str, ...]
    quantity: tuple[int, int]
    checkout_form: dict[str, Any]


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
        load=_load(r, r.get(raw, "load", "load", dict), deployments[entry_deployment]),
    )


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
    for part in ("requests", "limits"):
        section = r.get(resources, part, f"{w}.resources.{part}", dict)
        _quantity(r, parse_cpu, r.get(section, "cpu", f"{w}.resources.{part}.cpu", str), f"{w}.resources.{part}.cpu")
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
        termination_grace_seconds=r.get(body, "terminationGracePeriodSeconds",
                                         f"{w}.terminationGracePeriodSeconds", int, 30),
        traced=r.get(body, "traced", f"{w}.traced", bool, True),
        consumer=dict(r.get(body, "consumer", f"{w}.consumer", dict, {})),
        # Secret references come first so literal values can refer to them with $(VAR)
        env_order=(*secret_env, *(k for k in env if k not in secret_env)),
    )


def _load(r: _Reader, body: dict[str, Any], entry: DeploymentSpec) -> LoadSpec:
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
