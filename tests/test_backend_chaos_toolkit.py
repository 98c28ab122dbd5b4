"""Direct faults through chaostoolkit-kubernetes on the Kubernetes backend
(backends/kubernetes_chaos.py): each Chaos Mesh kind the catalog uses is created by the Chaos
Toolkit action for it, and the twin behind the API carries out exactly the fault its spec
describes (apiserver/chaos_mesh.py), the same as the twin backend's `chaos_start` with the
entry's own parameters."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.apiserver.identity import OPERATOR
from pytest_marathon.apiserver.kubeconfig import write_kubeconfig
from pytest_marathon.apiserver.pair import serve_apis
from pytest_marathon.backends.kubernetes import KubernetesBackend
from pytest_marathon.faults.backend_support import CHAOS_MESH_KINDS, chaos_kinds
from pytest_marathon.faults.catalog import load_catalog
from pytest_marathon.twin.engine import Twin

pytest.importorskip("chaosk8s", reason="chaostoolkit-kubernetes is not installed (the `cluster` extra)")


def _one_entry_per_kind() -> list[Any]:
    seen: dict[str, Any] = {}
    for entry in load_catalog("boutique"):
        kinds = chaos_kinds(entry)
        if entry.mechanism == "direct" and kinds and kinds <= CHAOS_MESH_KINDS:
            seen.setdefault(min(kinds), entry)
    return sorted(seen.values(), key=lambda e: e.id)


ENTRIES = _one_entry_per_kind()
TOKEN = "operator-token-for-chaos-tests"


def _arguments(entry: Any) -> dict[str, Any]:
    [step] = [m for m in entry.experiment["method"] if m["provider"]["func"] == "start_fault"]
    return dict(step["provider"]["arguments"])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A twin behind its APIs and a Kubernetes backend holding the operator's kubeconfig."""
    from kubernetes import client

    twin = Twin(app="boutique", seed=4)
    twin.advance_to(30.0)
    apis = serve_apis(twin, "boutique", operator_token=TOKEN)
    kubeconfig = write_kubeconfig(tmp_path_factory.mktemp("operator") / "kubeconfig.yaml", apis.kube.url,
                                  twin.namespace, token=TOKEN, user=OPERATOR)
    configuration = client.Configuration(host=apis.kube.url, api_key={"BearerToken": TOKEN},
                                         api_key_prefix={"BearerToken": "Bearer"})
    backend = KubernetesBackend("boutique", api_client=client.ApiClient(configuration),
                                namespace=twin.namespace, prometheus_url=apis.prometheus.url,
                                operator_url=apis.kube.url, operator_token=TOKEN, kubeconfig=kubeconfig,
                                closers=(apis,))
    yield twin, backend
    backend.close()


def test_every_chaos_mesh_kind_of_the_catalog_is_covered() -> None:
    assert {min(chaos_kinds(e)) for e in ENTRIES} == CHAOS_MESH_KINDS


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_the_object_chaos_toolkit_creates_starts_the_entrys_fault(served: Any, entry: Any,
                                                                    tmp_path: Path) -> None:
    twin, backend = served
    arguments = _arguments(entry)
    kind, target = arguments.pop("kind"), arguments.pop("target")
    # a kubeconfig of the user's that names another cluster must not receive the experiment
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: x, cluster: {server: "
                         "'http://127.0.0.1:9'}}]\ncontexts: [{name: x, context: {cluster: x, user: x}}]\n"
                         "current-context: x\nusers: [{name: x, user: {}}]\n")
    saved = os.environ.get("KUBECONFIG")
    os.environ["KUBECONFIG"] = str(elsewhere)
    try:
        handle = backend.chaos_start(kind, target, **arguments)
    finally:
        os.environ.pop("KUBECONFIG") if saved is None else os.environ.__setitem__("KUBECONFIG", saved)
    assert os.environ.get("KUBECONFIG") == saved
    [fault] = list(twin.chaos.active.values())
    expected = {**arguments}
    if kind == "pod_kill":
        expected = {"count": 1, "interval": float(arguments["interval"])}
    assert (fault.kind, fault.target) == (kind, target)
    if kind == "memory_hog":
        assert fault.params["size"] == arguments["size"]
    else:
        assert {k: fault.params[k] for k in expected} == pytest.approx(expected)
    backend.chaos_stop(handle)
    assert not twin.chaos.active
