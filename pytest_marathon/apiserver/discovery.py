"""Discovery documents: what kubectl reads to map `get pods` or `deploy/x` onto a URL.

Legacy discovery only (`/api` APIVersions, `/apis` APIGroupList, per-version APIResourceList,
shapes of k8s.io/apimachinery pkg/apis/meta/v1/types.go). kubectl 1.32 first asks `/api` and
`/apis` for the aggregated `apidiscovery.k8s.io/v2` form; client-go decides by the answer's
Content-Type and falls back to the legacy documents when it is plain `application/json`
(client-go discovery/discovery_client.go), as against any server that predates aggregation.
Secrets are listed like on any cluster: the resource exists, reading it is what RBAC refuses.

Besides what the twin runs, discovery names every kind `pytest-marathon manifests` renders
(ServiceAccounts, RBAC, the Prometheus operator's PrometheusRule), so kubectl can map those
documents onto URLs; the twin keeps no such objects, and reading one answers 404 NotFound, as
a cluster where they were never created would (`kubectl apply --dry-run=client` then reports
"created (dry run)").
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
    if "/" not in name and kind in ("Pod", "Service", "Deployment", "ReplicaSet"):
        doc["categories"] = ["all"]
    if group:
        doc["group"], doc["version"] = group, version
    return doc


CORE_V1: list[dict[str, Any]] = [
    _resource("configmaps", "configmap", "ConfigMap", _WRITE, short=["cm"]),
    _resource("endpoints", "endpoints", "Endpoints", _READ, short=["ep"]),
    _resource("events", "event", "Event", _READ, short=["ev"]),
    _resource("namespaces", "namespace", "Namespace", _READ, namespaced=False, short=["ns"]),
    _resource("nodes", "node", "Node", _READ, namespaced=False, short=["no"]),
    _resource("pods", "pod", "Pod", _READ, short=["po"]),
    _resource("pods/log", "", "Pod", ["get"]),
    _resource("secrets", "secret", "Secret", _READ),
    _resource("serviceaccounts", "serviceaccount", "ServiceAccount", _READ, short=["sa"]),
    _resource("services", "service", "Service", _READ, short=["svc"]),
]
APPS_V1: list[dict[str, Any]] = [
    _resource("deployments", "deployment", "Deployment", _WRITE, short=["deploy"]),
    _resource("deployments/scale", "", "Scale", ["get", "patch", "update"], group="autoscaling", version="v1"),
    _resource("deployments/status", "", "Deployment", ["get"]),
    _resource("replicasets", "replicaset", "ReplicaSet", _READ, short=["rs"]),
]


RBAC_V1: list[dict[str, Any]] = [
    _resource("clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", _READ, namespaced=False),
    _resource("clusterroles", "clusterrole", "ClusterRole", _READ, namespaced=False),
    _resource("rolebindings", "rolebinding", "RoleBinding", _READ),
    _resource("roles", "role", "Role", _READ),
]
#: The Prometheus operator's rules (prometheus-operator pkg/apis/monitoring/v1 prometheusrule_types.go).
MONITORING_V1: list[dict[str, Any]] = [
    _resource("prometheusrules", "prometheusrule", "PrometheusRule", _READ, short=["promrule"]),
]
#: Group versions served besides the core `v1`, in the order `/apis` lists them.
GROUPS: dict[str, str] = {"apps/v1": "apps", "rbac.authorization.k8s.io/v1": "rbac.authorization.k8s.io",
                          "monitoring.coreos.com/v1": "monitoring.coreos.com"}


def version() -> dict[str, Any]:
    return {"major": "1", "minor": "32", "gitVersion": GIT_VERSION, "gitCommit": "", "gitTreeState": "clean",
            "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23.4", "compiler": "gc", "platform": "linux/amd64"}


def api_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}


def api_groups() -> dict[str, Any]:
    groups = []
    for group_version, name in GROUPS.items():
        gv = {"groupVersion": group_version, "version": group_version.split("/")[1]}
        groups.append({"name": name, "versions": [gv], "preferredVersion": gv})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


GROUP_RESOURCES = {"v1": CORE_V1, "apps/v1": APPS_V1, "rbac.authorization.k8s.io/v1": RBAC_V1,
                   "monitoring.coreos.com/v1": MONITORING_V1}


def resource_list(group_version: str) -> dict[str, Any] | None:
    resources = GROUP_RESOURCES.get(group_version)
    if resources is None:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}
