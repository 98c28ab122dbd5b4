"""What a cluster's API says about a responsible artifact or the app's shape, for a Kubernetes
backend without the twin's operator endpoints.

`artifact_value` reads the kinds a Deployment, ConfigMap or Node holds (`env:`, `image:`,
`limits:`, `replicas:`, `probe:`, `flag:`, `node:`, `pod:`) in the words the twin uses
(`twin/probes.py`); `code:`, `secret:` and `network:` need the registry, the Secret's data or the
chaos in force, which an agent-grade API client does not read, and raise `BackendError`.
`topology` is the Services and the deployments' `*_ADDR` env, as the twin derives its own.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_marathon.backends.base import BackendError, secret_ref_text
from pytest_marathon.backends.kubernetes_shapes import probe_fields


def artifact_value(backend: Any, artifact: str) -> str | None:
    kind, sep, rest = str(artifact).partition(":")
    if not sep:
        raise BackendError(f"artifact must look like kind:name, got {artifact!r}")
    name, _, part = rest.partition("/")
    if kind == "flag":
        maps = [m for m in backend.resources("configmaps") if m["metadata"]["name"] == "feature-flags"]
        return maps[0].get("data", {}).get(rest) if maps else None
    if kind == "node":
        nodes = [n for n in backend.resources("nodes") if n["metadata"]["name"] == rest]
        if not nodes:
            return None
        ready = [c for c in nodes[0].get("status", {}).get("conditions", []) if c.get("type") == "Ready"]
        return "Ready" if ready and ready[0].get("status") == "True" else "NotReady"
    if kind in ("code", "secret", "network"):
        raise BackendError(f"{kind}: artifacts need the image registry, the Secret's data or the chaos in force; "
                           "the Kubernetes API as this backend reads it carries none of them")
    deployments = [d for d in backend.resources("deployments") if d["metadata"]["name"] == name]
    if not deployments:
        return None
    dep = deployments[0]
    container = dep["spec"]["template"]["spec"]["containers"][0]
    if kind == "env":
        entry = next((e for e in container.get("env", []) if e["name"] == part), None)
        if entry is None:
            return None
        ref = entry.get("valueFrom", {}).get("secretKeyRef")
        return secret_ref_text(ref["name"], ref["key"]) if ref else entry.get("value", "")
    if kind == "image":
        return container["image"]
    if kind == "limits":
        return container.get("resources", {}).get("limits", {}).get(part)
    if kind == "replicas":
        return str(dep["spec"].get("replicas", 1))
    if kind == "probe":
        probe = container.get(f"{part}Probe")
        return None if probe is None else json.dumps(probe_fields(probe), sort_keys=True)
    if kind == "pod":
        pods = [p for p in backend.resources("pods") if p["metadata"].get("labels", {}).get("app") == name]
        ready = [p for p in pods if any(c.get("type") == "Ready" and c.get("status") == "True"
                                        for c in p.get("status", {}).get("conditions", []))]
        return str(len(ready))
    raise BackendError(f"unknown artifact kind {kind!r}")


def topology(backend: Any) -> dict[str, Any]:
    """Deployments, Services and the edges the deployments' `*_ADDR` variables draw."""
    services = {s["metadata"]["name"]: s for s in backend.resources("services")}
    deployments = backend.resources("deployments")
    edges = []
    for dep in sorted(deployments, key=lambda d: d["metadata"]["name"]):
        for entry in sorted(dep["spec"]["template"]["spec"]["containers"][0].get("env", []), key=lambda e: e["name"]):
            if not entry["name"].endswith("_ADDR") or "value" not in entry:
                continue
            host = entry["value"].rsplit(":", 1)[0].split(".", 1)[0]
            target = services[host]["spec"].get("selector", {}).get("app") if host in services else None
            edges.append({"from": dep["metadata"]["name"], "to": target, "via": entry["name"],
                          "address": entry["value"]})
    return {
        "namespace": backend.namespace,
        "deployments": [{"name": d["metadata"]["name"]} for d in sorted(deployments, key=lambda d: d["metadata"]["name"])],
        "services": [{"name": n, "port": s["spec"]["ports"][0]["port"],
                      "targetPort": s["spec"]["ports"][0].get("targetPort"),
                      "deployment": s["spec"].get("selector", {}).get("app")}
                     for n, s in sorted(services.items()) if s["spec"].get("ports")],
        "edges": edges,
    }
