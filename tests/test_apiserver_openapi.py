"""The twin's OpenAPI documents, tested with kubectl: `explain`, client-side validation of
`create`, `apply` and `replace`, and discovery of the kinds the manifests carry.

One TLS server per module (the operator's bearer token reaches it from kubectl only over TLS,
client-go tools/clientcmd/client_config.go), with an agent and an operator kubeconfig.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pytest_marathon.apiserver import openapi
from pytest_marathon.apiserver.identity import AGENT, OPERATOR, identity_of
from pytest_marathon.apiserver.kubeconfig import write_kubeconfig
from pytest_marathon.apiserver.server import KubeApiServer, start_kube_api
from pytest_marathon.backends import create_backend

kubernetes = pytest.importorskip("kubernetes")
KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")
OPERATOR_TOKEN = "operator-secret-token"


class Kubectl:
    def __init__(self, server: KubeApiServer, agent: Path, operator: Path, cache: Path) -> None:
        self.server, self.agent, self.operator, self.cache = server, agent, operator, cache

    def __call__(self, *args: str, as_operator: bool = False, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        config = self.operator if as_operator else self.agent
        return subprocess.run([KUBECTL, "--kubeconfig", str(config), "--cache-dir", str(self.cache), *args],
                              input=stdin, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    folder = tmp_path_factory.mktemp("openapi")
    twin = create_backend("boutique", 1)
    with start_kube_api(twin, operator_token=OPERATOR_TOKEN, tls=True) as server:
        assert server.url.startswith("https://") and server.certificate is not None
        ca = server.certificate.cert_pem
        # any token but the operator's is the agent's; one is needed or kubectl prompts for a password over TLS
        agent = write_kubeconfig(folder / "agent.yaml", server.url, "boutique", token="agent", ca_pem=ca)
        operator = write_kubeconfig(folder / "operator.yaml", server.url, "boutique", token=OPERATOR_TOKEN,
                                    user="operator", ca_pem=ca)
        yield Kubectl(server, agent, operator, folder / "cache")


def test_identity_is_the_operator_only_with_its_bearer_token() -> None:
    assert identity_of({"Authorization": "Bearer tok"}, "tok") == OPERATOR
    assert identity_of({"authorization": "bearer tok"}, "tok") == OPERATOR
    assert identity_of({"Authorization": "Bearer other"}, "tok") == AGENT
    assert identity_of({"Authorization": "Basic tok"}, "tok") == AGENT
    assert identity_of({}, "tok") == AGENT
    assert identity_of({"Authorization": "Bearer "}, None) == AGENT
    assert identity_of({"Authorization": "Bearer "}, "") == AGENT


def test_definitions_are_the_client_models_deterministically() -> None:
    """Generated twice from scratch: the same bytes; every root kind carries its GVK and every
    property the `kubernetes` client's model knows, under its JSON name."""
    first = json.dumps(openapi.definitions.__wrapped__(), sort_keys=False)
    assert first == json.dumps(openapi.definitions.__wrapped__(), sort_keys=False)
    defs = openapi.definitions()
    models = kubernetes.client.models
    for group, version, kind, model in openapi.ROOT_KINDS:
        [name] = [n for n, s in defs.items()
                  if {"group": group, "version": version, "kind": kind} in s.get("x-kubernetes-group-version-kind", [])]
        cls = getattr(models, model)
        assert set(defs[name]["properties"]) == set(cls.attribute_map.values()), kind
    spec = defs["io.k8s.api.apps.v1.DeploymentSpec"]
    assert spec["required"] == ["selector", "template"]
    assert spec["properties"]["template"]["$ref"] == "#/definitions/io.k8s.api.core.v1.PodTemplateSpec"
    assert spec["properties"]["selector"]["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"
    port = defs["io.k8s.api.core.v1.ServicePort"]["properties"]["targetPort"]
    assert port["$ref"] == f"#/definitions/{openapi.INT_OR_STRING}"


def test_every_kind_the_manifests_render_has_a_schema_but_the_custom_resource() -> None:
    """kubectl skips validating a kind without a schema: each rendered kind must have one,
    except the Prometheus operator's PrometheusRule, which has no model in the client."""
    from pytest_marathon.deploy.manifests import render

    served = {(g, v, k) for g, v, k, _ in openapi.ROOT_KINDS}
    for doc in [*render("boutique"), *render("boutique", rules_format="file")]:
        group, _, version = doc["apiVersion"].rpartition("/")
        if doc["kind"] != "PrometheusRule":
            assert (group, version, doc["kind"]) in served, doc["kind"]


@needs_kubectl
def test_explain_prints_the_kinds_fields_and_descriptions(kubectl: Kubectl) -> None:
    done = kubectl("explain", "deployment.spec.replicas")
    assert done.returncode == 0, done.stderr
    assert "KIND:       Deployment" in done.stdout and "GROUP:      apps" in done.stdout
    assert "FIELD: replicas <integer>" in done.stdout
    assert "Number of desired pods." in done.stdout
    fields = kubectl("explain", "deployment.spec").stdout
    assert "template\t<PodTemplateSpec> -required-" in fields
    role = kubectl("explain", "clusterrole.rules.verbs")
    assert role.returncode == 0 and "KIND:       ClusterRole" in role.stdout, role.stderr


def _frontend(kubectl: Kubectl) -> dict:
    done = kubectl("get", "deployment", "frontend", "-o", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@needs_kubectl
def test_a_wrong_field_is_refused_by_kubectl_as_the_schema_says(kubectl: Kubectl) -> None:
    """kubectl validates on its side when the server advertises no `fieldValidation`
    (kubectl pkg/cmd/util/factory_client_access.go `Validator`), with kube-openapi's messages."""
    doc = _frontend(kubectl)
    doc["spec"]["replica"] = 2
    for verb in (["create", "--dry-run=client"], ["apply", "--dry-run=client"], ["replace"]):
        done = kubectl(*verb, "-f", "-", stdin=json.dumps(doc))
        assert done.returncode == 1, (verb, done.stdout)
        assert ('ValidationError(Deployment.spec): unknown field "replica" in io.k8s.api.apps.v1.DeploymentSpec'
                in done.stderr), done.stderr
    doc = _frontend(kubectl)
    doc["spec"]["replicas"] = "two"
    done = kubectl("create", "--dry-run=client", "-f", "-", stdin=json.dumps(doc))
    assert ('invalid type for io.k8s.api.apps.v1.DeploymentSpec.replicas: got "string", expected "integer"'
            in done.stderr), done.stderr
    del doc["spec"]["template"]
    done = kubectl("create", "--dry-run=client", "-f", "-", stdin=json.dumps(doc))
    assert 'missing required field "template" in io.k8s.api.apps.v1.DeploymentSpec' in done.stderr, done.stderr


@needs_kubectl
def test_valid_documents_pass_and_replace_of_the_same_object_changes_nothing(kubectl: Kubectl) -> None:
    doc = _frontend(kubectl)
    done = kubectl("create", "--dry-run=client", "-f", "-", stdin=yaml.safe_dump(doc))
    assert done.returncode == 0 and done.stdout.strip() == "deployment.apps/frontend created (dry run)", done.stderr
    replaced = kubectl("replace", "-f", "-", stdin=json.dumps(doc))
    assert replaced.returncode == 0 and "deployment.apps/frontend replaced" in replaced.stdout, replaced.stderr
    assert _frontend(kubectl)["spec"] == doc["spec"]


@needs_kubectl
def test_discovery_names_the_manifests_kinds_which_the_twin_does_not_keep(kubectl: Kubectl) -> None:
    names = set(kubectl("api-resources", "-o", "name").stdout.split())
    assert {"clusterroles.rbac.authorization.k8s.io", "clusterrolebindings.rbac.authorization.k8s.io",
            "prometheusrules.monitoring.coreos.com", "serviceaccounts"} <= names
    done = kubectl("get", "clusterrole", "marathon-prometheus")
    assert done.returncode == 1
    assert 'clusterroles.rbac.authorization.k8s.io "marathon-prometheus" not found' in done.stderr, done.stderr


@needs_kubectl
def test_the_monitoring_namespace_is_the_operators_not_the_agents(kubectl: Kubectl) -> None:
    """The policy keeps the agent in its application's namespace; the operator identity reads
    beyond it (and finds nothing: the twin runs no monitoring namespace)."""
    agent = kubectl("get", "prometheusrule", "boutique-rules", "-n", "monitoring")
    assert agent.returncode == 1 and "(Forbidden)" in agent.stderr and "outside the application" in agent.stderr
    operator = kubectl("get", "prometheusrule", "boutique-rules", "-n", "monitoring", as_operator=True)
    assert operator.returncode == 1 and "(NotFound)" in operator.stderr, operator.stderr
    secret = kubectl("get", "secret", "redis-cart-credentials")
    assert "(Forbidden)" in secret.stderr and "reading secrets is forbidden" in secret.stderr


@needs_kubectl
def test_serve_writes_an_operator_kubeconfig_over_tls(tmp_path: Path) -> None:
    import signal
    import sys

    agent, operator = tmp_path / "agent.yaml", tmp_path / "operator.yaml"
    process = subprocess.Popen([sys.executable, "-m", "pytest_marathon", "serve", "--speed", "0", "--kubeconfig",
                                str(agent), "--operator-kubeconfig", str(operator)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(3)]
        assert lines[0].startswith("Kubernetes API: https://127.0.0.1:"), lines
        assert lines[2].startswith(f"operator:       {operator}"), lines
        assert operator.stat().st_mode & 0o077 == 0
        run = Kubectl(None, agent, operator, tmp_path / "cache")  # type: ignore[arg-type]
        pods = run("get", "pods")
        assert pods.returncode == 0 and "frontend-" in pods.stdout, pods.stderr
        assert "(Forbidden)" in run("get", "namespace", "monitoring").stderr
        assert "(NotFound)" in run("get", "namespace", "monitoring", as_operator=True).stderr
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0
