"""Symptom probes and responsible-artifact values (for the orchestrator and the scorer's evidence).

A probe runs a real synthetic request (or checks a condition) against the live twin but reports
to nothing agents can read: a null telemetry sink, its own random stream, CPU not charged, and the
round-robin positions restored, so probing does not change what the run records.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pytest_marathon.backends.base import BackendError
from pytest_marathon.determinism import rng_for
from pytest_marathon.twin.runtime import NullSink, _Trace

if TYPE_CHECKING:
    from pytest_marathon.twin.engine import Twin

PROBE_KINDS = ("request", "rpc", "deployment_ready", "no_error_logs")
PROBE_SESSION = "probe-0000000000000000000000000000"


def run_probe(twin: Twin, spec: Mapping[str, Any]) -> bool:
    kind = spec.get("kind") if isinstance(spec, Mapping) else None
    if kind not in PROBE_KINDS:
        raise BackendError(f"probe spec needs kind in {', '.join(PROBE_KINDS)}, got {spec!r}")
    if kind == "deployment_ready":
        dep = twin._deployment(str(spec.get("deployment")))
        return len(twin.cluster.ready_pods(dep.name)) >= max(1, dep.replicas)
    if kind == "no_error_logs":
        service = str(spec.get("service"))
        twin._deployment(service)
        window = float(spec.get("window", 60))
        contains = spec.get("contains")
        return not twin.logs(service=service, since=twin.now - window, level="error", contains=contains, limit=1)
    runtime = twin.runtime
    saved = (runtime.sink, runtime.weight, runtime.rng, dict(runtime._round_robin))
    runtime.sink, runtime.weight = NullSink(), 0.0
    runtime.rng = rng_for(twin.seed, "probe", f"{twin.now:.3f}")
    try:
        if kind == "request":
            return _request_probe(twin, spec)
        return _rpc_probe(twin, spec)
    finally:
        runtime.sink, runtime.weight, runtime.rng, runtime._round_robin = saved


def _route_for(twin: Twin, route: str) -> str:
    routes = twin.spec.deployments[twin.spec.entry_deployment].methods
    for name, method in routes.items():
        if route in (name, method.path) or method.path.startswith("/product/") and route.startswith("/product/"):
            return name
    raise BackendError(f"unknown route {route!r}; routes: {', '.join(sorted(m.path for m in routes.values()))}")


def _request_probe(twin: Twin, spec: Mapping[str, Any]) -> bool:
    route = _route_for(twin, str(spec.get("route", "/")))
    load = twin.spec.load
    base = {"session_id": PROBE_SESSION, "currency": str(spec.get("currency", "USD"))}
    product = str(spec.get("product_id", load.products[0]))
    steps: list[tuple[str, dict[str, Any]]] = []
    if route in ("checkout", "view_cart"):
        steps.append(("add_to_cart", {**base, "product_id": product, "quantity": "1"}))
    request = {**base, "product_id": product, "quantity": "1", "currency_code": base["currency"]}
    if route == "checkout":
        request.update(load.checkout_form)
    steps.append((route, request))
    limit = float(spec.get("max_seconds", twin.spec.slow_seconds))
    healthy = True
    for step, payload in steps:
        outcome, _trace = twin.runtime.entry(step, payload, twin.now, "probe", "0" * 32)
        healthy = healthy and outcome.status < 400 and outcome.seconds <= limit
    return healthy


def _rpc_probe(twin: Twin, spec: Mapping[str, Any]) -> bool:
    service = str(spec.get("service"))
    dep = twin._deployment(service)
    method = str(spec.get("method"))
    pods = sorted(twin.cluster.ready_pods(dep.name), key=lambda p: p.name)
    if not pods:
        return False
    code, _message, _response, ms = twin.runtime.serve(
        pods[0], method, dict(spec.get("request") or {}), _Trace("0" * 32, "probe", twin.now), "", 30_000.0)
    return code == "OK" and ms / 1000.0 <= float(spec.get("max_seconds", twin.spec.slow_seconds))


def _digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def artifact_value(twin: Twin, artifact: str) -> str | None:
    """`env:svc/VAR`, `image:svc`, `limits:svc/memory`, `replicas:svc`, `flag:name`, `probe:svc/kind`,
    `code:svc/path`, `secret:name`, `node:name`, `pod:svc`, `network:svc`; None when absent."""
    kind, sep, rest = str(artifact).partition(":")
    if not sep:
        raise BackendError(f"artifact must look like kind:name, got {artifact!r}")
    name, _, part = rest.partition("/")
    cluster = twin.cluster
    if kind == "flag":
        return cluster.configmaps.get("feature-flags", {}).get(rest)
    if kind == "secret":
        return _digest(cluster.secrets[rest]) if rest in cluster.secrets else None
    if kind == "node":
        node = cluster.nodes.get(rest)
        return None if node is None else ("Ready" if node.ready else "NotReady")
    dep = cluster.deployments.get(name)
    if dep is None:
        return None
    template = dep.template
    if kind == "env":
        if part in template.env:
            return template.env[part]
        ref = template.secret_env.get(part)
        return f"secretKeyRef:{ref[0]}/{ref[1]}" if ref else None
    if kind == "image":
        return template.image
    if kind == "limits":
        return template.resources["limits"].get(part)
    if kind == "replicas":
        return str(dep.replicas)
    if kind == "probe":
        probe = template.probes.get(part)
        return None if probe is None else json.dumps(probe, sort_keys=True)
    if kind == "code":
        files = twin.registry.files(template.image)
        return _digest(files[part]) if part in files else None
    if kind == "pod":
        return str(len(cluster.ready_pods(name)))
    if kind == "network":
        active = sorted(f.kind for f in twin.chaos.active.values()
                        if f.kind in ("network_delay", "network_loss", "partition")
                        and name in (f.target, f.params.get("peer")))
        return ",".join(active) or "ok"
    raise BackendError(f"unknown artifact kind {kind!r}")
