"""The catalog's symptom probes a cluster can answer from its API alone.

`deployment_ready` asks what `kubectl rollout status` asks (kubectl
pkg/polymorphichelpers/rollout_status.go): is the current revision rolled out? The current
ReplicaSet is the one whose `deployment.kubernetes.io/revision` annotation equals the
Deployment's; it is rolled out when as many of its own pods as the Deployment wants (at least
one) have the `Ready` condition. A stalled rollout whose old pod still serves, or a new pod that
crash-loops, is not: the twin's probe (twin/probes.py) means the same.

`no_error_logs` reads the service's pods' logs over the probe's window; `pods/log` has no level,
so an error line is one whose text names the level (docs/kubernetes-backend.md).

`request` and `rpc` probes send a synthetic request and look for this fault's signature in what
it produced; a cluster has no such request path yet, so entries that need them are not
scheduled on one (faults/backend_support.py, `SYMPTOM_PROBES`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_marathon.backends.base import BackendError

REVISION = "deployment.kubernetes.io/revision"
API_PROBES = ("deployment_ready", "no_error_logs")


def _owned_by(item: Mapping[str, Any], kind: str, name: str) -> bool:
    return any(ref.get("kind") == kind and ref.get("name") == name and ref.get("controller")
               for ref in item["metadata"].get("ownerReferences") or [])


def _ready(pod: Mapping[str, Any]) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def rollout_ready(backend: Any, deployment: str) -> bool:
    doc = backend._raw(backend.apps.read_namespaced_deployment, deployment, backend.namespace)
    revision = (doc["metadata"].get("annotations") or {}).get(REVISION)
    replica_sets = backend._raw(backend.apps.list_namespaced_replica_set, backend.namespace)["items"]
    current = [rs["metadata"]["name"] for rs in replica_sets
               if _owned_by(rs, "Deployment", deployment)
               and (rs["metadata"].get("annotations") or {}).get(REVISION) == revision]
    if not current:
        return False
    pods = backend._raw(backend.core.list_namespaced_pod, backend.namespace)["items"]
    ready = [p for p in pods if _owned_by(p, "ReplicaSet", current[0]) and _ready(p)]
    return len(ready) >= max(1, int(doc["spec"].get("replicas") or 0))


def run_probe(backend: Any, spec: Mapping[str, Any]) -> bool:
    kind = spec.get("kind")
    if kind == "deployment_ready":
        return rollout_ready(backend, str(spec.get("deployment")))
    if kind == "no_error_logs":
        service = str(spec.get("service"))
        backend._deployment(service)  # an unknown service is an error, not a healthy probe
        window = float(spec.get("window", 60))
        contains = spec.get("contains")
        return not backend.logs(service=service, since=backend.now - window, level="error",
                                contains=contains, limit=1)
    raise BackendError(f"a {kind!r} probe needs the twin's synthetic requests; "
                       "this cluster answers only " + ", ".join(API_PROBES))
