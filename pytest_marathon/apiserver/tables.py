"""`kubectl get`'s Table answers (meta.k8s.io/v1 Table), with the columns a real server prints.

kubectl asks for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` and prints the
server's columns as given; without them it would print NAME and AGE only. Columns and cell
rules follow kubernetes/kubernetes pkg/printers/internalversion/printers.go (printPod,
printDeployment, printReplicaSet, printService, printEndpoints, printNode, printNamespace,
printConfigMap, printEvent); ages are `duration.HumanDuration` of k8s.io/apimachinery
pkg/util/duration/duration.go, counted from the twin's virtual now, not the wall clock.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

_NAME = {"name": "Name", "type": "string", "format": "name", "description": "Name of the object", "priority": 0}


def _col(name: str, type_: str = "string", priority: int = 0) -> dict[str, Any]:
    return {"name": name, "type": type_, "format": "", "description": name, "priority": priority}


def human_duration(seconds: float) -> str:
    """apimachinery's HumanDuration: precise when short, coarse when long."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _since(stamp: str | None, now: datetime) -> str:
    if not stamp:
        return "<unknown>"
    return human_duration((now - datetime.fromisoformat(stamp.replace("Z", "+00:00"))).total_seconds())


def _pod(obj: dict[str, Any], now: datetime) -> list[Any]:
    status = obj.get("status", {})
    reason = status.get("reason") or status.get("phase", "")
    restarts, ready, last_restart = 0, 0, ""
    has_running = False
    for cs in reversed(status.get("containerStatuses", [])):
        restarts += cs.get("restartCount", 0)
        finished = cs.get("lastState", {}).get("terminated", {}).get("finishedAt") or ""
        last_restart = max(last_restart, finished)
        state = cs.get("state", {})
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state and state["terminated"].get("reason"):
            reason = state["terminated"]["reason"]
        elif "terminated" in state:
            term = state["terminated"]
            reason = f"Signal:{term['signal']}" if term.get("signal") else f"ExitCode:{term.get('exitCode', 0)}"
        elif cs.get("ready") and "running" in state:
            has_running = True
            ready += 1
    if reason == "Completed" and has_running:
        pod_ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", []))
        reason = "Running" if pod_ready else "NotReady"
    if obj["metadata"].get("deletionTimestamp") and status.get("phase") not in ("Succeeded", "Failed"):
        reason = "Terminating"
    shown_restarts: Any = restarts
    if restarts and last_restart:
        shown_restarts = f"{restarts} ({_since(last_restart, now)} ago)"
    total = len(obj.get("spec", {}).get("containers", []))
    return [obj["metadata"]["name"], f"{ready}/{total}", reason, shown_restarts,
            _since(obj["metadata"].get("creationTimestamp"), now), status.get("podIP") or "<none>",
            obj["spec"].get("nodeName") or "<none>", "<none>", "<none>"]


def _containers(template: dict[str, Any]) -> tuple[str, str]:
    containers = template.get("spec", {}).get("containers", [])
    return ",".join(c["name"] for c in containers), ",".join(c.get("image", "") for c in containers)


def _selector(selector: dict[str, Any] | None) -> str:
    labels = (selector or {}).get("matchLabels", selector or {})
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


def _deployment(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = obj["spec"], obj.get("status", {})
    names, images = _containers(spec["template"])
    return [obj["metadata"]["name"], f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}",
            status.get("updatedReplicas", 0), status.get("availableReplicas", 0),
            _since(obj["metadata"].get("creationTimestamp"), now), names, images, _selector(spec.get("selector"))]


def _replicaset(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = obj["spec"], obj.get("status", {})
    names, images = _containers(spec["template"])
    return [obj["metadata"]["name"], spec.get("replicas", 0), status.get("replicas", 0),
            status.get("readyReplicas", 0), _since(obj["metadata"].get("creationTimestamp"), now),
            names, images, _selector(spec.get("selector"))]


def _service(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec = obj["spec"]
    ports = ",".join(f"{p['port']}/{p.get('protocol', 'TCP')}" if not p.get("nodePort")
                     else f"{p['port']}:{p['nodePort']}/{p.get('protocol', 'TCP')}" for p in spec.get("ports", []))
    external = "<pending>" if spec.get("type") == "LoadBalancer" else "<none>"
    return [obj["metadata"]["name"], spec.get("type", "ClusterIP"), spec.get("clusterIP") or "<none>", external,
            ports or "<none>", _since(obj["metadata"].get("creationTimestamp"), now),
            _selector(spec.get("selector"))]


def _endpoints(obj: dict[str, Any], now: datetime) -> list[Any]:
    shown = [f"{a['ip']}:{p['port']}" for s in obj.get("subsets", []) for p in s.get("ports", [])
             for a in s.get("addresses", [])]
    text = ",".join(shown[:3]) + (f" + {len(shown) - 3} more..." if len(shown) > 3 else "")
    return [obj["metadata"]["name"], text or "<none>", _since(obj["metadata"].get("creationTimestamp"), now)]


def _node(obj: dict[str, Any], now: datetime) -> list[Any]:
    ready = next((c["status"] for c in obj["status"].get("conditions", []) if c["type"] == "Ready"), "Unknown")
    status = {"True": "Ready", "False": "NotReady"}.get(ready, "NotReady")
    if obj.get("spec", {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    info = obj["status"].get("nodeInfo", {})
    addresses = {a["type"]: a["address"] for a in obj["status"].get("addresses", [])}
    return [obj["metadata"]["name"], status, "<none>", _since(obj["metadata"].get("creationTimestamp"), now),
            info.get("kubeletVersion", ""), addresses.get("InternalIP", "<none>"),
            addresses.get("ExternalIP", "<none>"), info.get("osImage", "<unknown>"),
            info.get("kernelVersion", "<unknown>"), info.get("containerRuntimeVersion", "<unknown>")]


def _namespace(obj: dict[str, Any], now: datetime) -> list[Any]:
    return [obj["metadata"]["name"], obj.get("status", {}).get("phase", "Active"),
            _since(obj["metadata"].get("creationTimestamp"), now)]


def _configmap(obj: dict[str, Any], now: datetime) -> list[Any]:
    return [obj["metadata"]["name"], len(obj.get("data", {})) + len(obj.get("binaryData", {})),
            _since(obj["metadata"].get("creationTimestamp"), now)]


def _event(obj: dict[str, Any], now: datetime) -> list[Any]:
    involved = obj["involvedObject"]
    last = _since(obj.get("lastTimestamp") or obj.get("firstTimestamp"), now)
    first = _since(obj.get("firstTimestamp"), now)
    count = obj.get("count", 1)
    if count > 1:
        last = f"{last} (x{count} over {first})"
    source = obj.get("source", {}).get("component", "")
    return [last, obj.get("type", ""), obj.get("reason", ""), f"{involved['kind'].lower()}/{involved['name']}",
            involved.get("fieldPath", ""), source, obj.get("message", "").strip(), first, count,
            obj["metadata"]["name"]]


_Printer = Callable[[dict[str, Any], datetime], list[Any]]
PRINTERS: dict[str, tuple[list[dict[str, Any]], _Printer]] = {
    "pods": ([_NAME, _col("Ready"), _col("Status"), _col("Restarts", "integer"), _col("Age"), _col("IP", priority=1),
              _col("Node", priority=1), _col("Nominated Node", priority=1), _col("Readiness Gates", priority=1)], _pod),
    "deployments": ([_NAME, _col("Ready"), _col("Up-to-date", "integer"), _col("Available", "integer"), _col("Age"),
                     _col("Containers", priority=1), _col("Images", priority=1), _col("Selector", priority=1)],
                    _deployment),
    "replicasets": ([_NAME, _col("Desired", "integer"), _col("Current", "integer"), _col("Ready", "integer"),
                     _col("Age"), _col("Containers", priority=1), _col("Images", priority=1),
                     _col("Selector", priority=1)], _replicaset),
    "services": ([_NAME, _col("Type"), _col("Cluster-IP"), _col("External-IP"), _col("Port(s)"), _col("Age"),
                  _col("Selector", priority=1)], _service),
    "endpoints": ([_NAME, _col("Endpoints"), _col("Age")], _endpoints),
    "nodes": ([_NAME, _col("Status"), _col("Roles"), _col("Age"), _col("Version"),
               _col("Internal-IP", priority=1), _col("External-IP", priority=1), _col("OS-Image", priority=1),
               _col("Kernel-Version", priority=1), _col("Container-Runtime", priority=1)], _node),
    "namespaces": ([_NAME, _col("Status"), _col("Age")], _namespace),
    "configmaps": ([_NAME, _col("Data", "integer"), _col("Age")], _configmap),
    "events": ([_col("Last Seen"), _col("Type"), _col("Reason"), _col("Object"), _col("Subobject", priority=1),
                _col("Source", priority=1), _col("Message"), _col("First Seen", priority=1),
                _col("Count", "integer", priority=1), {**_NAME, "priority": 1}], _event),
}


def table(plural: str, objects: list[dict[str, Any]], now: datetime, resource_version: str) -> dict[str, Any]:
    columns, printer = PRINTERS[plural]
    rows = []
    for obj in objects:
        meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
        rows.append({"cells": printer(obj, now),
                     "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": resource_version},
            "columnDefinitions": columns, "rows": rows}


def wants_table(accept: str) -> bool:
    return "as=Table" in accept.replace(" ", "")
