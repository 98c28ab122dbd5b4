"""`pytest-marathon manifests`: the app definition the twin runs, rendered for a real cluster.

Checked with real clients: every document goes through the `kubernetes` Python client's models
(kubernetes-client/python `kubernetes/client/api_client.py` `deserialize`: the body of an API
response into a model, which refuses a missing required field), the rule pack through `promtool check rules`, the Prometheus configuration
through `promtool check config`, and the containers against the twin's own API.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_marathon.alerting.rules import load_rule_pack
from pytest_marathon.backends import create_backend
from pytest_marathon.cli import main
from pytest_marathon.deploy import collector_config_text
from pytest_marathon.deploy.manifests import render, to_yaml
from pytest_marathon.deploy.monitoring import collector_address
from pytest_marathon.deploy.series import IMAGES

kubernetes = pytest.importorskip("kubernetes")

MODELS = {
    "Namespace": "V1Namespace", "Secret": "V1Secret", "ConfigMap": "V1ConfigMap",
    "Deployment": "V1Deployment", "Service": "V1Service", "ServiceAccount": "V1ServiceAccount",
    "ClusterRole": "V1ClusterRole", "ClusterRoleBinding": "V1ClusterRoleBinding",
}
TRACING = ("ENABLE_TRACING", "COLLECTOR_SERVICE_ADDR", "OTEL_SERVICE_NAME")


@pytest.fixture(scope="module")
def docs() -> list[dict[str, Any]]:
    return render("boutique")


@pytest.fixture(scope="module")
def file_docs() -> list[dict[str, Any]]:
    return render("boutique", rules_format="file")


def _of(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def test_every_document_is_a_valid_kubernetes_client_model(docs: list[dict[str, Any]],
                                                           file_docs: list[dict[str, Any]]) -> None:
    """Deserializing raises on a missing required field; serializing back drops any field the
    model does not know, so equality means no unknown field either."""
    client = kubernetes.client.ApiClient()
    kinds = set()
    for doc in [*docs, *file_docs]:
        kinds.add(doc["kind"])
        if doc["kind"] == "PrometheusRule":
            assert doc["apiVersion"] == "monitoring.coreos.com/v1"
            continue
        model = client.deserialize(json.dumps(doc), MODELS[doc["kind"]], "application/json")
        assert client.sanitize_for_serialization(model) == doc, doc["metadata"]["name"]
    assert kinds == {*MODELS, "PrometheusRule"}


def test_rendering_is_byte_identical_and_the_command_prints_it(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    text = to_yaml(render("boutique"))
    assert text == to_yaml(render("boutique"))
    assert main(["manifests", "--app", "boutique"]) == 0
    assert capsys.readouterr().out == text
    out = tmp_path / "boutique.yaml"
    assert main(["manifests", "--app", "boutique", "--rules-format", "file", "-o", str(out)]) == 0
    assert out.read_text() == to_yaml(render("boutique", rules_format="file"))
    assert list(yaml.safe_load_all(text)) == render("boutique")


def test_unknown_app_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifests", "--app", "nosuchapp"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown app 'nosuchapp'" in err[0]


def test_containers_are_the_ones_the_twin_runs(docs: list[dict[str, Any]]) -> None:
    """Image, env (names, order, values and Secret references), ports, probes and resources equal
    the twin's Deployments read through its API; the manifests add only upstream's
    securityContext, redis' data volume and the env that sends spans to the collector."""
    twin = create_backend("boutique", seed=1)
    twin_deployments = twin.resources("deployments")
    assert {d["metadata"]["name"] for d in twin_deployments} <= {d["metadata"]["name"] for d in _of(docs, "Deployment")}
    for theirs in twin_deployments:
        name = theirs["metadata"]["name"]
        [ours] = _of(docs, "Deployment", name)
        assert ours["metadata"]["namespace"] == theirs["metadata"]["namespace"] == "boutique"
        assert ours["spec"]["replicas"] == theirs["spec"]["replicas"]
        assert ours["spec"]["selector"] == theirs["spec"]["selector"]
        [container] = ours["spec"]["template"]["spec"]["containers"]
        [twins] = theirs["spec"]["template"]["spec"]["containers"]
        container = dict(container)
        assert container.pop("securityContext")["readOnlyRootFilesystem"] is True
        if name == "redis-cart":
            assert container.pop("volumeMounts") == [{"name": "redis-data", "mountPath": "/data"}]
        else:
            tracing = container["env"][-3:]
            container["env"] = container["env"][:-3]
            assert tracing == [{"name": "ENABLE_TRACING", "value": "1"},
                               {"name": "COLLECTOR_SERVICE_ADDR", "value": collector_address()},
                               {"name": "OTEL_SERVICE_NAME", "value": name}]
        assert container == twins, name
    pods = {p["metadata"]["labels"]["app"]: p["spec"] for p in twin.resources("pods")}
    for name, pod in pods.items():
        [ours] = _of(docs, "Deployment", name)
        assert ours["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == pod["terminationGracePeriodSeconds"]


def test_services_secrets_and_configmaps_are_the_twins(docs: list[dict[str, Any]]) -> None:
    twin = create_backend("boutique", seed=1)
    for theirs in twin.resources("services"):
        [ours] = _of(docs, "Service", theirs["metadata"]["name"])
        assert ours["metadata"]["namespace"] == "boutique"
        spec = dict(theirs["spec"])
        del spec["clusterIP"]
        assert ours["spec"] == spec
    assert [d["metadata"]["name"] for d in _of(docs, "ConfigMap") if d["metadata"]["namespace"] == "boutique"] == [
        c["metadata"]["name"] for c in twin.resources("configmaps")]
    # the Secret the redis password comes from exists where both its readers run
    refs = {(e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"], d["metadata"]["namespace"])
            for d in _of(docs, "Deployment") for c in d["spec"]["template"]["spec"]["containers"]
            for e in c.get("env", []) if "valueFrom" in e}
    assert {(n, k) for n, k, _ in refs} == {("redis-cart-credentials", "password")}
    for name, key, ns in refs:
        [s] = [s for s in _of(docs, "Secret", name) if s["metadata"]["namespace"] == ns]
        assert key in s["stringData"]


def test_load_generator_runs_as_the_app_definition_says(docs: list[dict[str, Any]]) -> None:
    """release/kubernetes-manifests.yaml: Deployment `loadgenerator`, container `main`, env
    FRONTEND_ADDR/USERS/RATE; the user count is the one the twin's generator simulates."""
    [dep] = _of(docs, "Deployment", "loadgenerator")
    [container] = dep["spec"]["template"]["spec"]["containers"]
    assert container["name"] == "main"
    assert container["image"].endswith("/loadgenerator:v0.10.6")
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {"FRONTEND_ADDR": "frontend:80", "USERS": "10", "RATE": "1"}
    from pytest_marathon.twin.appspec import load_app

    assert int(env["USERS"]) == load_app("boutique").load.users


def test_collector_runs_the_shipped_configuration_on_the_image_it_names(docs: list[dict[str, Any]]) -> None:
    [config] = _of(docs, "ConfigMap", "otel-collector-config")
    assert config["data"] == {"collector.yaml": collector_config_text()}
    [dep] = _of(docs, "Deployment", "opentelemetrycollector")
    [container] = dep["spec"]["template"]["spec"]["containers"]
    named = re.search(r"^# Image: (\S+),", collector_config_text(), re.M)
    assert named and container["image"] == named.group(1) == IMAGES["collector"]
    assert container["args"] == ["--config=/conf/collector.yaml"]
    ports = {p["containerPort"] for p in container["ports"]}
    receiver = yaml.safe_load(collector_config_text())["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"]
    exporter = yaml.safe_load(collector_config_text())["exporters"]["prometheus"]["endpoint"]
    assert ports == {int(receiver.rsplit(":", 1)[1]), int(exporter.rsplit(":", 1)[1])}


def test_jaeger_receives_what_the_collector_exports_and_serves_its_query_api(docs: list[dict[str, Any]]) -> None:
    [dep] = _of(docs, "Deployment", "jaeger")
    [service] = _of(docs, "Service", "jaeger")
    [container] = dep["spec"]["template"]["spec"]["containers"]
    assert container["image"] == IMAGES["jaeger"]
    # upstream's all-in-one listens on localhost unless JAEGER_LISTEN_HOST says otherwise
    assert {"name": "JAEGER_LISTEN_HOST", "value": "0.0.0.0"} in container["env"]
    endpoint = yaml.safe_load(collector_config_text())["exporters"]["otlp/jaeger"]["endpoint"]
    host, port = endpoint.rsplit(":", 1)
    assert host == f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
    served = {p["port"] for p in service["spec"]["ports"]}
    assert int(port) in served and 16686 in served  # OTLP in, the query API v3 out


def test_exporters_are_the_pinned_releases(docs: list[dict[str, Any]]) -> None:
    images = {c["image"] for d in _of(docs, "Deployment") if d["metadata"]["namespace"] == "monitoring"
              for c in d["spec"]["template"]["spec"]["containers"]}
    assert {IMAGES["kube-state-metrics"], IMAGES["redis_exporter"], IMAGES["collector"]} <= images
    [exporter] = _of(docs, "Deployment", "redis-cart-exporter")
    [env] = exporter["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == {"name": "REDIS_PASSWORD",
                   "valueFrom": {"secretKeyRef": {"name": "redis-cart-credentials", "key": "password"}}}


PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed")


@needs_promtool
def test_rule_pack_passes_promtool_in_both_formats(docs: list[dict[str, Any]], file_docs: list[dict[str, Any]],
                                                   tmp_path: Path) -> None:
    pack = load_rule_pack("boutique")
    [rule] = _of(docs, "PrometheusRule")
    assert rule["metadata"]["namespace"] == "monitoring"
    from_crd = tmp_path / "crd.rules.yaml"
    from_crd.write_text(yaml.safe_dump(rule["spec"]))
    [configmap] = _of(file_docs, "ConfigMap", "prometheus-rules")
    assert configmap["data"] == {"boutique.rules.yaml": pack.text}
    from_file = tmp_path / "boutique.rules.yaml"
    from_file.write_text(configmap["data"]["boutique.rules.yaml"])
    for path in (from_crd, from_file):
        done = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"SUCCESS: {len(pack.rules)} rules found" in done.stdout
    assert not _of(file_docs, "PrometheusRule")


@needs_promtool
def test_prometheus_configuration_passes_promtool(file_docs: list[dict[str, Any]], tmp_path: Path) -> None:
    [config] = _of(file_docs, "ConfigMap", "prometheus-config")
    text = config["data"]["prometheus.yml"]
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    [rules] = _of(file_docs, "ConfigMap", "prometheus-rules")
    for name, body in rules["data"].items():
        (rules_dir / name).write_text(body)
    parsed = yaml.safe_load(text)
    parsed["rule_files"] = [str(rules_dir / Path(parsed["rule_files"][0]).name)]
    # the service-account files exist only inside a pod
    for job in parsed["scrape_configs"]:
        for section, key in (("tls_config", "ca_file"), ("authorization", "credentials_file")):
            if section in job:
                stand_in = tmp_path / Path(job[section][key]).name
                stand_in.write_text("x")
                job[section][key] = str(stand_in)
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(parsed))
    done = subprocess.run([PROMTOOL, "check", "config", str(path)], capture_output=True, text=True, timeout=60)
    if "field kubernetes_sd_configs not found" in done.stdout + done.stderr:
        # Debian's prometheus build leaves Kubernetes service discovery out: check the rest
        parsed["scrape_configs"] = [j for j in parsed["scrape_configs"] if "kubernetes_sd_configs" not in j]
        path.write_text(yaml.safe_dump(parsed))
        done = subprocess.run([PROMTOOL, "check", "config", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout + done.stderr
    jobs = [j["job_name"] for j in yaml.safe_load(text)["scrape_configs"]]
    assert jobs == ["otel-collector", "kube-state-metrics", "redis_exporter_targets", "kubernetes-cadvisor"]


def test_kubectl_apply_dry_run_validates_every_document_against_the_twins_api(tmp_path: Path) -> None:
    """`pytest-marathon manifests --app boutique | kubectl apply --dry-run=client -f -`: kubectl
    validates each document against the twin's OpenAPI schemas and GETs it to diff against.
    The operator's kubeconfig reaches the monitoring namespace (the agent's is refused there);
    what the twin does not run (monitoring, RBAC, the PrometheusRule, the load generator) reads
    404 and is "created", what it runs is "configured". A wrong field fails as kubectl reports it."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    from pytest_marathon.apiserver.kubeconfig import write_kubeconfig
    from pytest_marathon.apiserver.server import start_kube_api

    stream = subprocess.run([sys.executable, "-m", "pytest_marathon.cli", "manifests", "--app", "boutique"],
                            capture_output=True, text=True, timeout=120, check=True).stdout
    docs = list(yaml.safe_load_all(stream))
    with start_kube_api(create_backend("boutique", seed=1), operator_token="op-token", tls=True) as server:
        assert server.certificate is not None
        ca = server.certificate.cert_pem
        operator = write_kubeconfig(tmp_path / "operator", server.url, "boutique", token="op-token", user="operator",
                                    ca_pem=ca)
        agent = write_kubeconfig(tmp_path / "agent", server.url, "boutique", token="agent", ca_pem=ca)
        cache = ["--cache-dir", str(tmp_path / "cache")]
        done = subprocess.run([kubectl, "--kubeconfig", str(operator), *cache, "apply", "--dry-run=client", "-f", "-"],
                              input=stream, capture_output=True, text=True, timeout=120)
        # the agent's view, and a wrong field: one document each is enough
        outside = [d for d in docs if d["kind"] == "Secret" or d["kind"] == "ConfigMap"
                   and d["metadata"]["namespace"] == "monitoring"][:2]
        as_agent = subprocess.run([kubectl, "--kubeconfig", str(agent), *cache, "apply", "--dry-run=client", "-f", "-"],
                                  input=to_yaml(outside), capture_output=True, text=True, timeout=120)
        deployment = next(d for d in docs if d["kind"] == "Deployment")
        wrong = to_yaml([{**deployment, "spec": {**deployment["spec"], "replica": 1}}])
        invalid = subprocess.run([kubectl, "--kubeconfig", str(operator), *cache, "apply", "--dry-run=client", "-f",
                                  "-"], input=wrong, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.endswith("(dry run)")]
    assert len(lines) == len(docs)  # one verdict per document
    printed: dict[str, set[str]] = {}
    for line in lines:
        name, verdict = line.rsplit(" ", 3)[:2]
        printed.setdefault(name, set()).add(verdict)
    twin_runs = {d["metadata"]["name"] for d in create_backend("boutique", seed=1).resources("deployments")}

    def key(d: dict[str, Any]) -> str:
        group = d["apiVersion"].rpartition("/")[0]
        kind = d["kind"].lower()
        return f"{kind}.{group}/{d['metadata']['name']}" if group else f"{kind}/{d['metadata']['name']}"

    for d in docs:  # what the twin runs is "configured"; the rest (no Secret is kept) "created"
        runs = (d["metadata"].get("namespace") == "boutique" and d["kind"] in ("Service", "ConfigMap")
                or d["kind"] == "Deployment" and d["metadata"].get("namespace") == "boutique"
                and d["metadata"]["name"] in twin_runs
                or d["kind"] == "Namespace" and d["metadata"]["name"] == "boutique")
        assert ("configured" if runs else "created") in printed[key(d)], key(d)
    assert as_agent.returncode != 0
    assert 'secrets "redis-cart-credentials" is forbidden' in as_agent.stderr
    assert "namespace 'monitoring' is outside the application" in as_agent.stderr
    assert invalid.returncode != 0
    assert 'unknown field "replica" in io.k8s.api.apps.v1.DeploymentSpec' in invalid.stderr
