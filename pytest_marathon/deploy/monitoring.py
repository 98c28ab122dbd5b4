"""The monitoring stack the rule pack needs on a real cluster, as manifests.

The pack reads only the series `deploy/series.py` lists; this renders what produces and scrapes
them, in a `monitoring` namespace so the application's namespace holds the application alone (as
the twin's does):

- the OpenTelemetry Collector running the shipped `otel-collector.yaml` (a ConfigMap, mounted;
  the image its header names), receiving the services' spans on 4317 and serving span metrics
  on 8889;
- Jaeger all-in-one (in-memory storage) receiving the spans from the collector, its query API v3
  on 16686 for the Kubernetes backend's traces (`--marathon-jaeger-url`); upstream's default
  configuration listens on localhost only, so `JAEGER_LISTEN_HOST` opens it to the pod's
  network;
- kube-state-metrics limited to the pod, deployment and node collectors the series come from,
  with the read-only ClusterRole those need;
- one redis_exporter per datastore in multi-target mode, with the datastore's password (the
  Secret is copied: a pod can only reference a Secret of its own namespace);
- Prometheus (the image `app.yaml`'s `infrastructure.prometheus` names) with one scrape job per
  source: the collector and kube-state-metrics keep their own labels (`honor_labels`), the
  redis targets are relabelled as the exporter's README describes for `/scrape?target=`, and
  cAdvisor is read through the API server's node proxy (`/api/v1/nodes/<node>/proxy/metrics/
  cadvisor`, prometheus/prometheus `documentation/examples/prometheus-kubernetes.yml`);
- the rule pack, as a `PrometheusRule` for a Prometheus Operator, or with `rules_format="file"`
  as the shipped rule file in a ConfigMap the bundled Prometheus loads.
"""

from __future__ import annotations

from typing import Any

from pytest_marathon import yamlio
from pytest_marathon.alerting.rules import PACK_SUFFIX, load_rule_pack
from pytest_marathon.deploy import collector_config_text
from pytest_marathon.deploy.k8s import (
    CONTAINER_SECURITY,
    POD_SECURITY,
    deployment,
    namespace,
    secret,
    to_yaml,
)
from pytest_marathon.deploy.series import IMAGES
from pytest_marathon.twin.appspec import AppSpec
from pytest_marathon.twin.scrape import REDIS_JOB

NAMESPACE = "monitoring"
COLLECTOR = "opentelemetrycollector"  # upstream's Service name (google-cloud-operations component)
COLLECTOR_OTLP_PORT = 4317
COLLECTOR_METRICS_PORT = 8889
JAEGER = "jaeger"
JAEGER_OTLP_PORT = 4317
JAEGER_QUERY_PORT = 16686
KSM = "kube-state-metrics"
KSM_PORT = 8080
REDIS_EXPORTER_PORT = 9121
PROMETHEUS = "prometheus"
RULES_DIR = "/etc/prometheus/rules"
_SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def collector_address() -> str:
    return f"{COLLECTOR}.{NAMESPACE}.svc:{COLLECTOR_OTLP_PORT}"


def documents(spec: AppSpec, rules_format: str) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [namespace(NAMESPACE)]
    docs += _collector()
    docs += _jaeger()
    docs += _kube_state_metrics()
    for name, dep in sorted(spec.deployments.items()):
        if dep.kind != "datastore":
            continue
        for secret_name in sorted({s for s, _ in dep.secret_env.values()}):
            docs.append(secret(secret_name, NAMESPACE, spec.secrets[secret_name]))
        docs += _redis_exporter(name, dep.secret_env.get("REDIS_PASSWORD"))
    pack = load_rule_pack(spec.app)
    rule_file = f"{spec.app}{PACK_SUFFIX}"
    if rules_format == "file":
        docs.append(_configmap("prometheus-rules", {rule_file: pack.text}))
    else:
        docs.append({
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PrometheusRule",
            "metadata": {"name": f"{spec.app}-rules", "namespace": NAMESPACE, "labels": {"app": PROMETHEUS}},
            "spec": yamlio.safe_load(pack.text),
        })
    docs += _prometheus(spec, with_rule_file=rules_format == "file")
    return docs


def _configmap(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NAMESPACE},
            "data": data}


def _service(name: str, ports: list[tuple[str, int]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name}},
        "spec": {"type": "ClusterIP", "selector": {"app": name},
                 "ports": [{"name": n, "port": p, "targetPort": p, "protocol": "TCP"} for n, p in ports]},
    }


def _container(name: str, image: str, ports: list[tuple[str, int]], **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **fields,
            "ports": [{"name": n, "containerPort": p, "protocol": "TCP"} for n, p in ports],
            "securityContext": CONTAINER_SECURITY}


def _pod(containers: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {**fields, "securityContext": POD_SECURITY, "containers": containers}


def _resources(cpu: str, memory: str) -> dict[str, dict[str, str]]:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}


def _collector() -> list[dict[str, Any]]:
    ports = [("grpc-otlp", COLLECTOR_OTLP_PORT), ("metrics", COLLECTOR_METRICS_PORT)]
    container = _container(
        "otel-collector", IMAGES["collector"], ports,
        args=["--config=/conf/collector.yaml"],
        # memory_limiter's limit_percentage is a share of this limit
        resources=_resources("200m", "256Mi"),
        volumeMounts=[{"name": "config", "mountPath": "/conf", "readOnly": True}],
    )
    pod = _pod([container], volumes=[{"name": "config", "configMap": {"name": "otel-collector-config"}}])
    return [
        _configmap("otel-collector-config", {"collector.yaml": collector_config_text()}),
        deployment(COLLECTOR, NAMESPACE, 1, pod),
        _service(COLLECTOR, ports),
    ]


def _jaeger() -> list[dict[str, Any]]:
    ports = [("grpc-otlp", JAEGER_OTLP_PORT), ("query", JAEGER_QUERY_PORT)]
    container = _container(
        JAEGER, IMAGES["jaeger"], ports,
        env=[{"name": "JAEGER_LISTEN_HOST", "value": "0.0.0.0"}],
        resources=_resources("500m", "512Mi"),
    )
    return [deployment(JAEGER, NAMESPACE, 1, _pod([container])), _service(JAEGER, ports)]


def _kube_state_metrics() -> list[dict[str, Any]]:
    rules = [
        {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["list", "watch"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list", "watch"]},
    ]
    container = _container(KSM, IMAGES["kube-state-metrics"], [("http-metrics", KSM_PORT)],
                           args=["--resources=pods,deployments,nodes"], resources=_resources("100m", "128Mi"))
    return [
        *_account(KSM, rules),
        deployment(KSM, NAMESPACE, 1, _pod([container], serviceAccountName=KSM)),
        _service(KSM, [("http-metrics", KSM_PORT)]),
    ]


def _account(name: str, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A ServiceAccount with a ClusterRole of exactly `rules`, bound."""
    meta = {"name": f"marathon-{name}"}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": NAMESPACE}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta, "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": meta["name"]},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}]},
    ]


def _redis_exporter(datastore: str, password: tuple[str, str] | None) -> list[dict[str, Any]]:
    name = f"{datastore}-exporter"
    env = []
    if password is not None:  # main.go: -redis.password defaults to $REDIS_PASSWORD
        env.append({"name": "REDIS_PASSWORD",
                    "valueFrom": {"secretKeyRef": {"name": password[0], "key": password[1]}}})
    container = _container(name, IMAGES["redis_exporter"], [("metrics", REDIS_EXPORTER_PORT)],
                           env=env, resources=_resources("50m", "64Mi"))
    return [deployment(name, NAMESPACE, 1, _pod([container])), _service(name, [("metrics", REDIS_EXPORTER_PORT)])]


def _scrape_config(spec: AppSpec, with_rule_file: bool) -> dict[str, Any]:
    svc = f"{NAMESPACE}.svc"
    redis_targets = []
    for name, dep in sorted(spec.deployments.items()):
        if dep.kind != "datastore":
            continue
        service = next((s for s in sorted(spec.services.values(), key=lambda s: s.name) if s.selector == name), None)
        if service is None:
            continue
        redis_targets.append({
            "targets": [f"redis://{service.name}.{spec.namespace}.svc:{service.port}"],
            "labels": {
                "namespace": spec.namespace,
                # the twin's `instance` is the address as the app dials it (twin/scrape.py)
                "__tmp_instance": f"redis://{service.name}:{service.port}",
                "__tmp_exporter": f"{name}-exporter.{svc}:{REDIS_EXPORTER_PORT}",
            },
        })
    config: dict[str, Any] = {"global": {"scrape_interval": "15s", "evaluation_interval": "15s"}}
    if with_rule_file:
        config["rule_files"] = [f"{RULES_DIR}/*{PACK_SUFFIX}"]
    config["scrape_configs"] = [
        {"job_name": "otel-collector", "honor_labels": True,
         "static_configs": [{"targets": [f"{COLLECTOR}.{svc}:{COLLECTOR_METRICS_PORT}"]}]},
        {"job_name": KSM, "honor_labels": True,
         "static_configs": [{"targets": [f"{KSM}.{svc}:{KSM_PORT}"]}]},
        {"job_name": REDIS_JOB, "metrics_path": "/scrape", "static_configs": redis_targets,
         "relabel_configs": [
             {"source_labels": ["__address__"], "target_label": "__param_target"},
             {"source_labels": ["__tmp_instance"], "target_label": "instance"},
             {"source_labels": ["__tmp_exporter"], "target_label": "__address__"},
         ]},
        {"job_name": "kubernetes-cadvisor", "scheme": "https",
         "tls_config": {"ca_file": f"{_SA_DIR}/ca.crt"},
         "authorization": {"credentials_file": f"{_SA_DIR}/token"},
         "kubernetes_sd_configs": [{"role": "node"}],
         "relabel_configs": [
             {"target_label": "__address__", "replacement": "kubernetes.default.svc:443"},
             {"source_labels": ["__meta_kubernetes_node_name"], "regex": "(.+)",
              "target_label": "__metrics_path__", "replacement": "/api/v1/nodes/$1/proxy/metrics/cadvisor"},
         ]},
    ]
    return config


def _prometheus(spec: AppSpec, with_rule_file: bool) -> list[dict[str, Any]]:
    infra = spec.infrastructure.get(PROMETHEUS, {})
    rules = [{"apiGroups": [""], "resources": ["nodes", "nodes/proxy", "nodes/metrics"],
              "verbs": ["get", "list", "watch"]}]
    mounts = [{"name": "config", "mountPath": "/etc/prometheus/config", "readOnly": True},
              {"name": "data", "mountPath": "/prometheus"}]
    volumes: list[dict[str, Any]] = [{"name": "config", "configMap": {"name": "prometheus-config"}},
                                     {"name": "data", "emptyDir": {}}]
    if with_rule_file:
        mounts.append({"name": "rules", "mountPath": RULES_DIR, "readOnly": True})
        volumes.append({"name": "rules", "configMap": {"name": "prometheus-rules"}})
    container = _container(
        PROMETHEUS, infra.get("image", "prom/prometheus:v2.53.0"), [("web", 9090)],
        args=["--config.file=/etc/prometheus/config/prometheus.yml", "--storage.tsdb.path=/prometheus"],
        resources=infra.get("resources", _resources("200m", "512Mi")),
        volumeMounts=mounts,
    )
    config_text = to_yaml([_scrape_config(spec, with_rule_file)]).removeprefix("---\n")
    return [
        *_account(PROMETHEUS, rules),
        _configmap("prometheus-config", {"prometheus.yml": config_text}),
        deployment(PROMETHEUS, NAMESPACE, 1, _pod([container], serviceAccountName=PROMETHEUS, volumes=volumes)),
        _service(PROMETHEUS, [("web", 9090)]),
    ]
