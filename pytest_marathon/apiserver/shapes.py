"""The twin's objects as a real API server returns them: identity and bookkeeping fields added.

`Twin.resources()` gives the Kubernetes JSON tools print; clients need a little more to walk
between objects: a `uid` on every object, owner references that name their owner's uid with
`controller: true` (kubectl's `rollout history|undo` and `describe deployment` keep only the
ReplicaSets `metav1.IsControlledBy` the deployment, kubectl pkg/util/deployment/deployment.go),
a ReplicaSet `spec.selector`, `imageID` on container statuses (required by the `kubernetes`
client's models), a `resourceVersion`, and the objects the twin does not keep itself:
namespaces, endpoints. Everything here is read-only decoration; state stays in the backend.
"""

from __future__ import annotations

import copy
from typing import Any

from pytest_marathon.backends.base import Backend
from pytest_marathon.twin.objects import pod_uid, timestamp

#: Kubernetes kind of each plural the server lists, with its API group version.
KINDS: dict[str, tuple[str, str]] = {
    "namespaces": ("Namespace", "v1"),
    "nodes": ("Node", "v1"),
    "pods": ("Pod", "v1"),
    "services": ("Service", "v1"),
    "endpoints": ("Endpoints", "v1"),
    "configmaps": ("ConfigMap", "v1"),
    "events": ("Event", "v1"),
    "deployments": ("Deployment", "apps/v1"),
    "replicasets": ("ReplicaSet", "apps/v1"),
}
CLUSTER_SCOPED = frozenset({"namespaces", "nodes"})
_OWNER_GROUPS = {"ReplicaSet": "apps/v1", "Deployment": "apps/v1"}


def uid_for(kind: str, namespace: str, name: str) -> str:
    """A stable UUID per object (pods keep the twin's own); a real server draws random ones."""
    if kind == "Pod":
        return pod_uid(name, namespace)
    return pod_uid(f"{kind}/{name}", namespace)


class Shaper:
    """Reads objects from a backend and adds what a real API server's answer carries."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.namespace = backend.namespace
        self._born: str | None = None

    def born(self) -> str | None:
        """When the application was deployed: its oldest ReplicaSet. Objects the twin creates
        with the app (services, configmaps, the namespace) date from then."""
        if self._born is None:
            times = [rs["metadata"].get("creationTimestamp") for rs in self.backend.resources("replicasets")]
            self._born = min((t for t in times if t), default=timestamp(self.backend.now))
        return self._born

    def objects(self, plural: str, resource_version: str) -> list[dict[str, Any]]:
        """Every object of `plural` the application has, shaped; infrastructure left out, as
        the project's resource tool leaves it out."""
        if plural == "namespaces":
            raw = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace},
                    "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}]
        elif plural == "events":
            raw = [self._event(e) for e in self.backend.events(limit=100_000)]
        elif plural == "endpoints":
            raw = self._endpoints()
        else:
            raw = [copy.deepcopy(o) for o in self.backend.resources(plural)]
        hidden = set(self.backend.infrastructure())
        out = []
        for obj in raw:
            if obj.get("metadata", {}).get("labels", {}).get("app") in hidden:
                continue
            out.append(self._decorate(plural, obj, resource_version))
        return out

    def _decorate(self, plural: str, obj: dict[str, Any], resource_version: str) -> dict[str, Any]:
        kind, api_version = KINDS[plural]
        obj.setdefault("apiVersion", api_version)
        obj.setdefault("kind", kind)
        meta = obj.setdefault("metadata", {})
        namespace = "" if plural in CLUSTER_SCOPED else self.namespace
        if namespace:
            meta.setdefault("namespace", namespace)
        meta["uid"] = uid_for(kind, namespace, meta["name"])
        meta["resourceVersion"] = resource_version
        meta.setdefault("creationTimestamp", self._created(plural, obj))
        for ref in meta.get("ownerReferences", []):
            ref.setdefault("apiVersion", _OWNER_GROUPS.get(ref["kind"], "v1"))
            ref["uid"] = uid_for(ref["kind"], namespace, ref["name"])
            ref.setdefault("controller", True)
            ref.setdefault("blockOwnerDeletion", True)
        if plural in ("deployments", "replicasets", "pods"):
            spec = obj["spec"]["template"]["spec"] if plural != "pods" else obj["spec"]
            for container in spec.get("containers", []):
                _default_probes(container)
        if plural == "replicasets":
            labels = obj["spec"]["template"]["metadata"]["labels"]
            obj["spec"].setdefault("selector", {"matchLabels": dict(labels)})
        if plural == "pods":
            for status in obj.get("status", {}).get("containerStatuses", []):
                status.setdefault("imageID", "")
            obj["status"].setdefault("hostIP", self.node_ip(obj["spec"].get("nodeName", "")))
            if obj["status"].get("podIP"):
                obj["status"].setdefault("podIPs", [{"ip": obj["status"]["podIP"]}])
            if obj["status"].get("containerStatuses") and obj["status"]["containerStatuses"][0].get("state", {}).get("running"):
                obj["status"].setdefault("startTime", obj["status"]["containerStatuses"][0]["state"]["running"]["startedAt"])
        if plural == "nodes":
            obj["status"].pop("podCount", None)  # the twin's own count; no Node field carries it
            obj["status"].setdefault("nodeInfo", dict(NODE_INFO))
            obj["status"].setdefault("addresses", [{"type": "InternalIP", "address": self.node_ip(meta["name"])},
                                                   {"type": "Hostname", "address": meta["name"]}])
        return obj

    def node_ip(self, node: str) -> str:
        """A node's InternalIP, fixed by its place among the nodes (the twin gives nodes none)."""
        names = sorted(n["metadata"]["name"] for n in self.backend.resources("nodes"))
        return f"10.128.0.{names.index(node) + 2}" if node in names else ""

    def _created(self, plural: str, obj: dict[str, Any]) -> str | None:
        if plural == "deployments":
            # a Deployment is as old as its first ReplicaSet (the controller makes it at once)
            name = obj["metadata"]["name"]
            times = [rs["metadata"].get("creationTimestamp") for rs in self.backend.resources("replicasets")
                     if rs["metadata"]["labels"].get("app") == name]
            return min((t for t in times if t), default=self.born())
        if plural == "events":
            return obj.get("firstTimestamp")
        return self.born()

    def _event(self, event: dict[str, Any]) -> dict[str, Any]:
        event = {k: v for k, v in event.items() if k != "t"}
        involved = event["involvedObject"]
        namespace = "" if involved["kind"] == "Node" else self.namespace
        involved["uid"] = uid_for(involved["kind"], namespace, involved["name"])
        involved.setdefault("apiVersion", _OWNER_GROUPS.get(involved["kind"], "v1"))
        event.setdefault("source", {"component": _SOURCES.get(involved["kind"], "")})
        return event

    def _endpoints(self) -> list[dict[str, Any]]:
        """v1 Endpoints as the endpoints controller derives them: each Service's ready pods as
        addresses, the not-ready ones as notReadyAddresses (pkg/controller/endpoint)."""
        pods = self.backend.resources("pods")
        out = []
        for svc in self.backend.resources("services"):
            selector = svc["spec"].get("selector", {})
            ready, not_ready = [], []
            for pod in pods:
                labels = pod["metadata"].get("labels", {})
                if pod["metadata"].get("deletionTimestamp") or not pod["status"].get("podIP"):
                    continue
                if any(labels.get(k) != v for k, v in selector.items()):
                    continue
                address = {"ip": pod["status"]["podIP"], "nodeName": pod["spec"].get("nodeName", ""),
                           "targetRef": {"kind": "Pod", "name": pod["metadata"]["name"],
                                         "namespace": self.namespace}}
                is_ready = any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"]["conditions"])
                (ready if is_ready else not_ready).append(address)
            ports = [{k: v for k, v in (("name", p.get("name")), ("port", p["targetPort"]),
                                        ("protocol", p.get("protocol", "TCP"))) if v is not None}
                     for p in svc["spec"]["ports"]]
            subset: dict[str, Any] = {"ports": ports}
            if ready:
                subset["addresses"] = ready
            if not_ready:
                subset["notReadyAddresses"] = not_ready
            out.append({"apiVersion": "v1", "kind": "Endpoints",
                        "metadata": {"name": svc["metadata"]["name"], "namespace": self.namespace},
                        "subsets": [subset] if ready or not_ready else []})
        return out


#: A node's `status.nodeInfo` (every field is required by the `kubernetes` client's model);
#: `kubectl get nodes` prints kubeletVersion as VERSION: the release kubectl 1.32 pairs with.
KUBELET_VERSION = "v1.32.0"
NODE_INFO = {"architecture": "amd64", "bootID": "", "containerRuntimeVersion": "containerd://1.7.24",
             "kernelVersion": "6.6.56", "kubeProxyVersion": "", "kubeletVersion": KUBELET_VERSION,
             "machineID": "", "operatingSystem": "linux", "osImage": "Container-Optimized OS from Google",
             "systemUUID": ""}
_SOURCES = {"Pod": "kubelet", "Deployment": "deployment-controller", "ReplicaSet": "replicaset-controller",
            "Node": "node-controller"}


def _default_probes(container: dict[str, Any]) -> None:
    """Fields the API server fills in when a probe leaves them out (pkg/apis/core/v1/defaults.go
    SetDefaults_Probe, SetDefaults_HTTPGetAction, SetDefaults_GRPCAction): `kubectl describe`
    prints them, and dereferences a gRPC probe's `service` (kubectl pkg/describe/describe.go
    DescribeProbe), which a real server never leaves out."""
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(kind)
        if probe is None:
            continue
        for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                           ("failureThreshold", 3)):
            probe.setdefault(key, value)
        if "httpGet" in probe:
            probe["httpGet"].setdefault("path", "/")
            probe["httpGet"].setdefault("scheme", "HTTP")
        if "grpc" in probe:
            probe["grpc"].setdefault("service", "")


def list_doc(plural: str, items: list[dict[str, Any]], resource_version: str) -> dict[str, Any]:
    kind, api_version = KINDS[plural]
    return {"apiVersion": api_version, "kind": f"{kind}List", "metadata": {"resourceVersion": resource_version},
            "items": items}

