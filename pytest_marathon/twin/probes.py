"""Symptom probes and responsible-artifact values (for the orchestrator and the scorer's evidence).

A probe runs a real synthetic request (or checks a condition) against the live twin but reports
to nothing agents can read: a capturing sink only the probe reads, its own random stream, CPU not
charged, and the round-robin positions restored, so probing does not change what the run records.

A request or rpc probe may carry a `signature` (a string, or a list of strings that must all occur
in one line of evidence). It then answers whether THIS fault's symptom is present, not whether the
app is healthy: with up to 11 faults live, a page can fail for another fault's reason after this
one was repaired. Such a probe is unhealthy only when the request failed or was slow AND a line
of what the request produced carries the signature. Evidence lines (see `evidence_lines`):

    <service> <level>: <log message>                   every log line
    <service>: <CODE>: <message>                        a server span that failed
    <caller> -> <address>: <CODE>: <message>            a client span that failed
    <caller> -> <address>: slow network (<n> ms)        an edge that added >= SLOW_MS itself
    <service>: slow handler (<n> ms)                    a handler whose own time was >= SLOW_MS

so a latency fault's signature names the slow edge or service (`frontend -> cartservice:`,
`slow`), and a wrong address names the address the caller dialled.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pytest_marathon.backends.base import BackendError, secret_ref_text
from pytest_marathon.determinism import rng_for
from pytest_marathon.twin import rpctexts
from pytest_marathon.twin.load import HTTP_STEP, fill, request_of
from pytest_marathon.twin.runtime import _Trace

if TYPE_CHECKING:
    from pytest_marathon.twin.engine import Twin

PROBE_KINDS = ("request", "rpc", "deployment_ready", "no_error_logs")
PROBE_SESSION = "probe-0000000000000000000000000000"
SLOW_MS = 1000.0


class CapturingSink:
    """Keeps one probe's logs and spans for the probe alone (metrics are dropped)."""

    def __init__(self) -> None:
        self.logs: list[tuple[str, str, str]] = []
        self.spans: list[tuple[int, dict[str, Any]]] = []
        self.request = 0  # span ids restart with each request of a multi-step probe

    def next_request(self) -> None:
        self.request += 1

    def log(self, t: float, service: str, pod: str, level: str, message: str, trace_id: str) -> None:
        self.logs.append((service, level, message))

    def span(self, span: dict[str, Any], weight: float, traced: bool = True) -> None:
        # the probe sees every hop, traced or not: it judges the symptom, not the telemetry
        self.spans.append((self.request, span))

    def server(self, *args: Any) -> None:
        return None

    client = http = server


def _short_peer(peer: str) -> str:
    """A dialled address in the short form signatures name (`cartservice:7070`): the cluster DNS
    names of the same Service (`cartservice.<ns>`, `.<ns>.svc`, `.<ns>.svc.cluster.local`) are
    one destination, and an ordinary release may switch between them (faults/background.py)."""
    host, sep, port = peer.rpartition(":")
    parts = host.split(".")
    if sep and 2 <= len(parts) <= 5 and (len(parts) == 2 or parts[2] == "svc"):
        return f"{parts[0]}:{port}"
    return peer


def evidence_lines(sink: CapturingSink) -> list[str]:
    """What the probe's request produced, one line per log, failed span or slow hop."""
    lines = [f"{service} {level}: {message}" for service, level, message in sink.logs]
    children: dict[tuple[int, str], float] = {}
    for request, span in sink.spans:
        parent = (request, span.get("parent_span_id") or "")
        children[parent] = children.get(parent, 0.0) + float(span["duration_ms"])
    for request, span in sink.spans:
        own = float(span["duration_ms"]) - children.get((request, span["span_id"]), 0.0)
        client = span["kind"] == "SPAN_KIND_CLIENT"
        where = f"{span['service']} -> {_short_peer(span.get('peer', ''))}" if client else span["service"]
        if span["status_message"]:  # a non-OK code, whether or not the instrumentation calls it an error
            lines.append(f"{where}: {span['status_message']}")
        if own >= SLOW_MS:
            lines.append(f"{where}: {'slow network' if client else 'slow handler'} ({own:.0f} ms)")
    return lines


def _signature(spec: Mapping[str, Any]) -> list[str]:
    signature = spec.get("signature")
    if signature is None:
        return []
    parts = [signature] if isinstance(signature, str) else signature
    if not isinstance(parts, list) or not parts or not all(isinstance(p, str) and p for p in parts):
        raise BackendError(f"probe signature must be a non-empty string or list of strings, got {signature!r}")
    return parts


def _carries(sink: CapturingSink, signature: list[str]) -> bool:
    return any(all(part in line for part in signature) for line in evidence_lines(sink))


def run_probe(twin: Twin, spec: Mapping[str, Any]) -> bool:
    kind = spec.get("kind") if isinstance(spec, Mapping) else None
    if kind not in PROBE_KINDS:
        raise BackendError(f"probe spec needs kind in {', '.join(PROBE_KINDS)}, got {spec!r}")
    if kind == "deployment_ready":
        return _rollout_ready(twin, str(spec.get("deployment")))
    if kind == "no_error_logs":
        service = str(spec.get("service"))
        twin._deployment(service)
        window = float(spec.get("window", 60))
        contains = spec.get("contains")
        return not twin.logs(service=service, since=twin.now - window, level="error", contains=contains, limit=1)
    signature = _signature(spec)
    runtime = twin.runtime
    saved = (runtime.sink, runtime.weight, runtime.rng, dict(runtime._round_robin), runtime.crashes)
    sink = CapturingSink()
    runtime.sink, runtime.weight, runtime.crashes = sink, 0.0, False
    runtime.rng = rng_for(twin.seed, "probe", f"{twin.now:.3f}")
    try:
        ok = _request_probe(twin, spec) if kind == "request" else _rpc_probe(twin, spec)
    finally:
        runtime.sink, runtime.weight, runtime.rng, runtime._round_robin, runtime.crashes = saved
    return ok or bool(signature) and not _carries(sink, signature)


def _rollout_ready(twin: Twin, deployment: str) -> bool:
    """The current revision is rolled out: its own pods are all ready (a stalled rollout whose
    old pod still serves, or a new pod that crash-loops, is not)."""
    dep = twin._deployment(deployment)
    current = dep.current_rs()
    ready = [p for p in twin.cluster.ready_pods(dep.name) if p.replica_set == current.name]
    return len(ready) >= max(1, dep.replicas)


def _route_for(twin: Twin, route: str) -> str:
    routes = twin.spec.deployments[twin.spec.entry_deployment].methods
    for name, method in routes.items():
        if route in (name, method.path) or method.path.startswith("/product/") and route.startswith("/product/"):
            return name
    raise BackendError(f"unknown route {route!r}; routes: {', '.join(sorted(m.path for m in routes.values()))}")


def _task_steps(twin: Twin, spec: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A load task's requests with the probe's fixed values: the first of each `load.values` list
    unless the spec names one (`values: {product: ...}`), the probe's own user and first person."""
    load = twin.spec.load
    task = str(spec.get("task", ""))
    if task not in load.requests:
        raise BackendError(f"unknown load task {task!r}; tasks: {', '.join(sorted(load.requests))}")
    values: dict[str, Any] = {key: options[0] for key, options in sorted(load.values.items()) if options}
    values.update({str(k): v for k, v in dict(spec.get("values") or {}).items()})
    values["user"] = values["session"] = PROBE_SESSION
    if load.people:
        values["person"] = {**load.people[0], "userId": PROBE_SESSION}
    return [(HTTP_STEP, request_of(fill(template, values))) for template in load.requests[task]]


def _request_probe(twin: Twin, spec: Mapping[str, Any]) -> bool:
    if twin.spec.load.requests:
        return _run_steps(twin, spec, _task_steps(twin, spec))
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
    return _run_steps(twin, spec, steps)


def _run_steps(twin: Twin, spec: Mapping[str, Any], steps: list[tuple[str, dict[str, Any]]]) -> bool:
    limit = float(spec.get("max_seconds", twin.spec.slow_seconds))
    healthy = True
    for step, payload in steps:
        if isinstance(twin.runtime.sink, CapturingSink):
            twin.runtime.sink.next_request()
        outcome, trace = twin.runtime.entry(step, payload, twin.now, "probe", "0" * 32)
        if not trace.spans and outcome.error:
            _probe_span(twin, twin.spec.entry_deployment, f"UNAVAILABLE: {outcome.error}")
        healthy = healthy and not outcome.failed and outcome.seconds <= limit
    return healthy


def _rpc_probe(twin: Twin, spec: Mapping[str, Any]) -> bool:
    service = str(spec.get("service"))
    dep = twin._deployment(service)
    method = str(spec.get("method"))
    pods = sorted(twin.cluster.ready_pods(dep.name), key=lambda p: p.name)
    if not pods:
        service = next((s for s in twin.spec.services.values() if s.selector == dep.name), None)
        where = f"{twin.runtime.cluster_ip(service.name)}:{service.port}" if service else dep.name
        _probe_span(twin, dep.name, f"UNAVAILABLE: {rpctexts.refused('go', *where.rsplit(':', 1))}")
        return False
    code, message, _response, ms = twin.runtime.serve(
        pods[0], method, dict(spec.get("request") or {}), _Trace("0" * 32, "probe", twin.now), "", 30_000.0)
    if code != "OK":
        _probe_span(twin, dep.name, f"{code}: {message}")
    return code == "OK" and ms / 1000.0 <= float(spec.get("max_seconds", twin.spec.slow_seconds))


def _probe_span(twin: Twin, deployment: str, status_message: str) -> None:
    """The probe's own call failed: record it as the probe's client span would."""
    service = next((s for s in twin.spec.services.values() if s.selector == deployment), None)
    port = service.port if service else twin.cluster.deployments[deployment].port
    twin.runtime.sink.span(
        {"span_id": "probe", "parent_span_id": "", "service": "probe", "kind": "SPAN_KIND_CLIENT",
         "peer": f"{service.name if service else deployment}:{port}", "duration_ms": 0.0,
         "status": "STATUS_CODE_ERROR", "status_message": status_message}, 0.0)


def _digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def _secret_state(twin: Twin, name: str) -> str | None:
    """A Secret's content digest and whether every running client and server holds its current value:
    rotating a credential is corrected by restarting the clients that still hold the old one,
    which changes the second half even though the Secret itself stays rotated."""
    cluster = twin.cluster
    secret = cluster.secrets.get(name)
    if secret is None:
        return None
    stale = False
    for dep_name, dep in sorted(cluster.deployments.items()):
        refs = {var: key for var, (sec, key) in dep.template.secret_env.items() if sec == name}
        if not refs:
            continue
        for pod in cluster.pods_of(dep_name):
            if cluster.spec.deployments[dep_name].kind == "datastore":
                # the server's credential is its live setting, not the env it started with
                server = twin.servers.get(pod.name)
                if server is not None and pod.running and server.password not in {
                    secret.get(key) for key in refs.values()
                }:
                    stale = True
            elif any(pod.env.get(var) != secret.get(key) for var, key in refs.items()):
                stale = True
    return f"{_digest(secret)}:{'stale-consumers' if stale else 'in-sync'}"


def artifact_value(twin: Twin, artifact: str) -> str | None:
    """`env:svc/VAR`, `image:svc`, `limits:svc/memory`, `replicas:svc`, `flag:name`, `probe:svc/kind`,
    `code:svc/path`, `secret:name`, `node:name`, `pod:svc`, `network:svc`; None when absent."""
    kind, sep, rest = str(artifact).partition(":")
    if not sep:
        raise BackendError(f"artifact must look like kind:name, got {artifact!r}")
    name, _, part = rest.partition("/")
    cluster = twin.cluster
    if kind == "flag":
        if twin.spec.flags is not None:
            return twin.runtime.flag_file(twin.spec.flags).get(rest, {}).get("defaultVariant")
        return cluster.configmaps.get("feature-flags", {}).get(rest)
    if kind == "secret":
        return _secret_state(twin, rest)
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
        return secret_ref_text(*ref) if ref else None
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
        serving = [p for p in cluster.ready_pods(name) if cluster.nodes[p.node].ready]
        return str(len(serving))
    if kind == "network":
        active = sorted(f.kind for f in twin.chaos.active.values()
                        if f.kind in ("network_delay", "network_loss", "partition")
                        and name in (f.target, f.params.get("peer")))
        return ",".join(active) or "ok"
    raise BackendError(f"unknown artifact kind {kind!r}")
