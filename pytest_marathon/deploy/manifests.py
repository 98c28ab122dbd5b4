"""Kubernetes manifests rendered from the app definition the twin runs.

One `app.yaml` drives both worlds: the containers come from `PodTemplate.of` and
`PodTemplate.container_k8s` (the code that builds the twin's own Deployments), Services and
ConfigMaps from `service_k8s` / `configmap_k8s`, so the image, env, probes and resources a
cluster runs are the ones the twin simulates. What the twin does not model but a real pod needs
is added here, each cited to GoogleCloudPlatform/microservices-demo v0.10.6:

- pod and container `securityContext` of every Deployment (`release/kubernetes-manifests.yaml`);
- redis' `emptyDir` at `/data` (same file: the root filesystem is read-only);
- the load generator Deployment (same file, container `main`; its image, env and resources from
  `app.yaml`'s `infrastructure.loadgenerator`);
- the tracing env that sends spans to the collector (`kustomize/components/
  google-cloud-operations/kustomization.yaml`: `ENABLE_TRACING`, `COLLECTOR_SERVICE_ADDR`,
  `OTEL_SERVICE_NAME`), on every service because the twin traces every service.

Upstream's per-service ServiceAccounts carry no permissions and are not rendered (pods use the
namespace's default account). Zones are not a manifest's business: nodes get their
`topology.kubernetes.io/zone` labels from the cluster (`deploy/kind.py`).
"""

from __future__ import annotations

from typing import Any

from pytest_marathon.deploy import monitoring
from pytest_marathon.deploy.k8s import (
    CONTAINER_SECURITY,
    POD_SECURITY,
    deployment,
    namespace,
    secret,
    to_yaml,
)
from pytest_marathon.twin.appspec import AppSpec, DeploymentSpec, load_app
from pytest_marathon.twin.objects import PodTemplate, configmap_k8s, service_k8s

RULES_FORMATS = ("prometheusrule", "file")
__all__ = ["RULES_FORMATS", "render", "to_yaml"]

DATASTORE_VOLUME = ("redis-data", "/data")
LOADGENERATOR = "loadgenerator"


def tracing_env(service: str) -> list[dict[str, str]]:
    """The env entries that turn a service's OpenTelemetry export on, pointed at the collector."""
    return [
        {"name": "ENABLE_TRACING", "value": "1"},
        {"name": "COLLECTOR_SERVICE_ADDR", "value": monitoring.collector_address()},
        {"name": "OTEL_SERVICE_NAME", "value": service},
    ]


def render(app: str, rules_format: str = "prometheusrule") -> list[dict[str, Any]]:
    """Every document `kubectl apply` needs to run `app` and the telemetry its rule pack reads,
    each namespace before what lives in it. Pure: the same app definition gives the same documents in the same order."""
    if rules_format not in RULES_FORMATS:
        raise ValueError(f"--rules-format must be one of {', '.join(RULES_FORMATS)}, got {rules_format!r}")
    spec = load_app(app)
    return [*app_documents(spec), *monitoring.documents(spec, rules_format)]


def app_documents(spec: AppSpec) -> list[dict[str, Any]]:
    ns = spec.namespace
    docs: list[dict[str, Any]] = [namespace(ns)]
    docs += [secret(name, ns, data) for name, data in sorted(spec.secrets.items())]
    docs += [configmap_k8s(name, ns, data) for name, data in sorted(spec.configmaps.items())]
    docs += [app_deployment(dep, ns, spread=spec.zones.spread) for _, dep in sorted(spec.deployments.items())]
    for svc in sorted(spec.services.values(), key=lambda s: s.name):
        doc = service_k8s(svc.name, ns, svc.port, svc.target_port, svc.selector, svc.type, "", svc.port_name,
                          svc.traffic_distribution)
        del doc["spec"]["clusterIP"]  # the API server allocates it
        doc["metadata"]["labels"] = {"app": svc.selector}
        docs.append(doc)
    if LOADGENERATOR in spec.infrastructure:
        docs.append(load_generator(spec.infrastructure[LOADGENERATOR], ns))
    return docs


def app_deployment(dep: DeploymentSpec, ns: str, spread: bool = False) -> dict[str, Any]:
    container = PodTemplate.of(dep).container_k8s(dep.port)
    if dep.has_code:
        container["env"] += tracing_env(dep.name)
    container["securityContext"] = CONTAINER_SECURITY
    pod: dict[str, Any] = {"terminationGracePeriodSeconds": dep.termination_grace_seconds,
                           "securityContext": POD_SECURITY, "containers": [container]}
    if dep.kind == "datastore":
        volume, path = DATASTORE_VOLUME
        container["volumeMounts"] = [{"name": volume, "mountPath": path}]
        pod["volumes"] = [{"name": volume, "emptyDir": {}}]
    if spread:
        # one replica per zone: the active and the standby site (docs/fidelity.md, Astronomy Shop)
        pod["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": dep.name}},
        }]
    return deployment(dep.name, ns, dep.replicas, pod)


def load_generator(infra: dict[str, Any], ns: str) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": infra["image"],
        "env": [{"name": k, "value": str(v)} for k, v in (infra.get("env") or {}).items()],
        "resources": infra["resources"],
        "securityContext": CONTAINER_SECURITY,
    }
    pod = {"terminationGracePeriodSeconds": 5, "securityContext": POD_SECURITY, "containers": [container]}
    return deployment(LOADGENERATOR, ns, 1, pod)
