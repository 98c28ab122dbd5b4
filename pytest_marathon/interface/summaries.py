"""One-line-ish summaries of Kubernetes objects for listings.

A full Deployment is a few kilobytes of JSON; a listing of twenty of them would swamp an agent.
Listings show the fields an SRE scans first; `get_resources` with a name returns the full object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RESOURCE_KINDS: tuple[str, ...] = ("deployments", "pods", "services", "configmaps", "nodes")


def _get(obj: Any, *path: str | int) -> Any:
    for step in path:
        if isinstance(step, int):
            if not isinstance(obj, list) or len(obj) <= step:
                return None
        elif not isinstance(obj, Mapping):
            return None
        obj = obj[step] if isinstance(step, int) else obj.get(step)
    return obj


def _conditions(obj: Mapping[str, Any]) -> dict[str, str]:
    return {
        str(c.get("type")): str(c.get("status"))
        for c in (_get(obj, "status", "conditions") or [])
        if isinstance(c, Mapping)
    }


def summarise(kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    name = _get(obj, "metadata", "name")
    if kind == "deployments":
        container = _get(obj, "spec", "template", "spec", "containers", 0) or {}
        return {
            "name": name,
            "revision": _get(obj, "metadata", "annotations", "deployment.kubernetes.io/revision"),
            "image": container.get("image"),
            "replicas": _get(obj, "spec", "replicas"),
            "ready": _get(obj, "status", "readyReplicas"),
            "updated": _get(obj, "status", "updatedReplicas"),
            "conditions": _conditions(obj),
        }
    if kind == "pods":
        status = _get(obj, "status", "containerStatuses", 0) or {}
        state = status.get("state") or {}
        waiting = _get(state, "waiting", "reason")
        return {
            "name": name,
            "phase": _get(obj, "status", "phase"),
            "ready": status.get("ready"),
            "restarts": status.get("restartCount"),
            "waiting": waiting,
            "last_terminated": _get(status, "lastState", "terminated", "reason"),
            "node": _get(obj, "spec", "nodeName"),
            "image": status.get("image"),
        }
    if kind == "services":
        ports = _get(obj, "spec", "ports") or []
        return {
            "name": name,
            "type": _get(obj, "spec", "type"),
            "selector": _get(obj, "spec", "selector"),
            "ports": [f"{p.get('port')}->{p.get('targetPort')}" for p in ports if isinstance(p, Mapping)],
        }
    if kind == "configmaps":
        return {"name": name, "data": dict(_get(obj, "data") or {})}
    return {
        "name": name,
        "zone": _get(obj, "metadata", "labels", "topology.kubernetes.io/zone"),
        "conditions": _conditions(obj),
        "allocatable": _get(obj, "status", "allocatable"),
    }
