"""Discovery documents: what kubectl reads to map `get pods` or `deploy/x` onto a URL.

Legacy discovery only (`/api` APIVersions, `/apis` APIGroupList, per-version APIResourceList,
shapes of k8s.io/apimachinery pkg/apis/meta/v1/types.go). kubectl 1.32 first asks `/api` and
`/apis` for the aggregated `apidiscovery.k8s.io/v2` form; client-go decides by the answer's
Content-Type and falls back to the legacy documents when it is plain `application/json`
(client-go discovery/discovery_client.go), as against any server that predates aggregation.
Secrets are listed like on any cluster: the resource exists, reading it is what RBAC refuses.
"""

from __future__ import annotations

from typing import Any

GIT_VERSION = "v1.32.0"

_READ = ["get", "list", "watch"]
_WRITE = ["get", "list", "watch", "patch", "update"]


def _resource(name: str, singular: str, kind: str, verbs: list[str], namespaced: bool = True,
              short: list[str] | None = None, group: str = "", version: str = "") -> dict[str, Any]:
    doc: dict[str, Any] = {"name": name, "singularName": singular, "namespaced": namespaced, "kind": kind,
                           "verbs": verbs}
    if short:
        doc["shortNames"] = short
    if "/" not in name and kind not in ("Event", "Namespace", "Node", "ConfigMap", "Secret", "Endpoints"):
        doc["categories"] = ["all"]
    if group:
        doc["group"], doc["version"] = group, version
    return doc


CORE_V1: list[dict[str, Any]] = [
    _resource("configmaps", "configmap", "ConfigMap", _READ, short=["cm"]),
    _resource("endpoints", "endpoints", "Endpoints", _READ, short=["ep"]),
    _resource("events", "event", "Event", _READ, short=["ev"]),
    _resource("namespaces", "namespace", "Namespace", _READ, namespaced=False, short=["ns"]),
    _resource("nodes", "node", "Node", _READ, namespaced=False, short=["no"]),
    _resource("pods", "pod", "Pod", _READ, short=["po"]),
    _resource("pods/log", "", "Pod", ["get"]),
    _resource("secrets", "secret", "Secret", _READ),
    _resource("services", "service", "Service", _READ, short=["svc"]),
]
APPS_V1: list[dict[str, Any]] = [
    _resource("deployments", "deployment", "Deployment", _WRITE, short=["deploy"]),
    _resource("deployments/scale", "", "Scale", ["get", "patch", "update"], group="autoscaling", version="v1"),
    _resource("deployments/status", "", "Deployment", ["get"]),
    _resource("replicasets", "replicaset", "ReplicaSet", _READ, short=["rs"]),
]


def version() -> dict[str, Any]:
    return {"major": "1", "minor": "32", "gitVersion": GIT_VERSION, "gitCommit": "", "gitTreeState": "clean",
            "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23.4", "compiler": "gc", "platform": "linux/amd64"}


def api_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}


def api_groups() -> dict[str, Any]:
    apps = {"groupVersion": "apps/v1", "version": "v1"}
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [{"name": "apps", "versions": [apps], "preferredVersion": apps}]}


GROUP_RESOURCES = {"v1": CORE_V1, "apps/v1": APPS_V1}


def resource_list(group_version: str) -> dict[str, Any] | None:
    resources = GROUP_RESOURCES.get(group_version)
    if resources is None:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}
