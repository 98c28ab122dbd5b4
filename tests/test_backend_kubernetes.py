"""The Kubernetes backend against the twin's own API servers (`--marathon-backend=kubernetes`
without a kubeconfig): the same marathon, the same evidence, the same score as the twin backend;
and the operator's side of the API server is closed to anyone without its token."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.apiserver.server import KubeApiServer
from pytest_marathon.backends import BackendError, create_backend
from pytest_marathon.bundle import read_bundle
from pytest_marathon.config import RunConfig
from pytest_marathon.runner import record_marathon
from pytest_marathon.scoring import score_bundle
from pytest_marathon.twin.engine import Twin

TOKEN = "operator-token-for-tests"
#: streams whose records must be identical between the backends (invocations carry wall times)
SAME = ("schedule", "releases", "sli", "alerts", "probes", "interventions")


def _request(url: str, method: str, doc: Any = None, token: str | None = None,
             content_type: str = "application/json") -> tuple[int, Any]:
    headers = {"Content-Type": content_type}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None if doc is None else json.dumps(doc).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


@pytest.fixture(scope="module")
def served() -> Any:
    twin = Twin(app="boutique", seed=3)
    twin.advance_to(60)
    with KubeApiServer(twin, lock=threading.RLock(), operator_token=TOKEN) as server:
        yield twin, server


def test_operator_calls_need_the_token(served: Any) -> None:
    twin, server = served
    status, doc = _request(f"{server.url}/marathon/v1/artifact_value", "POST", {"artifact": "image:frontend"})
    assert status == 403 and doc["reason"] == "Forbidden"
    status, doc = _request(f"{server.url}/marathon/v1/artifact_value", "POST", {"artifact": "image:frontend"},
                           token=TOKEN)
    assert status == 200 and doc["result"] == twin.artifact_value("image:frontend")


def test_a_release_patch_needs_the_token_and_changes_the_twin_as_release_does(served: Any) -> None:
    twin, server = served
    path = f"{server.url}/apis/apps/v1/namespaces/{twin.namespace}/deployments/cartservice"
    patch = {"spec": {"strategy": {"type": "Recreate", "rollingUpdate": None}}}
    ct = "application/strategic-merge-patch+json"
    status, doc = _request(path, "PATCH", patch, content_type=ct)
    assert status == 422, doc  # the agent's kubectl may not change the strategy
    status, doc = _request(path, "PATCH", patch, token=TOKEN, content_type=ct)
    assert status == 200, doc
    assert twin.resources("deployments", "cartservice")[0]["spec"]["strategy"] == {"type": "Recreate"}


def test_a_chaos_mesh_object_starts_and_stops_the_chaos_its_spec_describes(served: Any) -> None:
    twin, server = served
    doc = {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "PodChaos",
           "metadata": {"name": "kill-frontend", "namespace": twin.namespace},
           "spec": {"action": "pod-kill", "mode": "one",
                    "selector": {"namespaces": [twin.namespace], "labelSelectors": {"app": "frontend"}}}}
    path = f"{server.url}/apis/chaos-mesh.org/v1alpha1/namespaces/{twin.namespace}/podchaos"
    assert _request(path, "POST", doc)[0] == 403  # only the operator runs experiments
    status, created = _request(path, "POST", doc, token=TOKEN)
    assert status == 201
    [fault] = [f for f in twin.chaos.active.values() if f.handle == created["metadata"]["uid"]]
    assert (fault.kind, fault.target) == ("pod_kill", "frontend")
    status, _ = _request(f"{path}/kill-frontend", "DELETE", token=TOKEN)
    assert status == 200 and not twin.chaos.active
    # what the twin does not model is refused naming the field, and nothing starts
    unsupported = {**doc, "metadata": {"name": "kill-all"}, "spec": {**doc["spec"], "mode": "fixed"}}
    status, answer = _request(path, "POST", unsupported, token=TOKEN)
    assert status == 422 and answer["details"]["causes"][0]["field"] == "spec.mode"
    assert not twin.chaos.active


def test_podchaos_pod_failure_and_container_kill_through_the_chaos_mesh_api(served: Any) -> None:
    twin, server = served
    path = f"{server.url}/apis/chaos-mesh.org/v1alpha1/namespaces/{twin.namespace}/podchaos"
    selector = {"namespaces": [twin.namespace], "labelSelectors": {"app": "cartservice"}}
    kill = {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "PodChaos", "metadata": {"name": "kill-cart"},
            "spec": {"action": "container-kill", "mode": "one", "containerNames": ["server"], "selector": selector}}
    status, created = _request(path, "POST", kill, token=TOKEN)
    assert status == 201, created
    fail = {**kill, "metadata": {"name": "fail-cart"},
            "spec": {"action": "pod-failure", "mode": "one", "duration": "100s", "selector": selector}}
    status, created = _request(path, "POST", fail, token=TOKEN)
    assert status == 201, created
    [fault] = [f for f in twin.chaos.active.values() if f.handle == created["metadata"]["uid"]]
    assert (fault.kind, fault.target, fault.params["duration"]) == ("pod_failure", "cartservice", 100.0)
    [pod] = [p for p in twin.resources("pods") if p["metadata"]["name"].startswith("cartservice-")]
    assert pod["spec"]["containers"][0]["image"] == "gcr.io/google-containers/pause:latest"
    for name in ("kill-cart", "fail-cart"):
        assert _request(f"{path}/{name}", "DELETE", token=TOKEN)[0] == 200
    assert not twin.chaos.active


def _bundle(out: Path, backend: str) -> Path:
    config = RunConfig(app="boutique", agent="runbook", seed=1, scenario="short-5", out_dir=out / backend,
                       backend=backend)
    return record_marathon(config)


@pytest.mark.slow  # two short-5 marathons, ~20 s on the twin and ~60 s through the APIs
def test_short_5_with_the_runbook_scores_the_same_through_the_kubernetes_api(tmp_path: Path) -> None:
    twin, kube = _bundle(tmp_path, "twin"), _bundle(tmp_path, "kubernetes")
    for stream in SAME:
        assert read_bundle(kube).stream(stream) == read_bundle(twin).stream(stream), stream
    # the whole score report, the backend's name aside (docs/kubernetes-backend.md)
    through_api, on_twin = score_bundle(kube), score_bundle(twin)
    assert (through_api["run"].pop("backend"), on_twin["run"].pop("backend")) == ("kubernetes", "twin")
    assert through_api == on_twin


def test_create_backend_kubernetes_serves_a_twin_and_steps_its_clock_forward_only() -> None:
    backend = create_backend("boutique", 1, backend="kubernetes")
    try:
        backend.advance_to(30)
        assert backend.now == 30
        assert "frontend" in backend.workloads()
        [vector] = backend.promql.instant("vector(1)", 30)
        assert vector["value"] == 1.0
        history = backend.rollout_history("frontend")
        assert history and history[-1]["current"]
        assert backend.restart("frontend").message == "deployment.apps/frontend restarted"
        with pytest.raises(BackendError):  # the clock does not go back
            backend.advance_to(10)
        with pytest.raises(BackendError, match="unknown deployment"):  # the twin's own words
            backend.source("nosuch")
        assert backend.now == 30
    finally:
        backend.close()


def test_a_cluster_from_a_kubeconfig_reads_through_the_api_and_skips_what_it_cannot_deliver(
    served: Any, tmp_path: Path
) -> None:
    """The real-cluster path (a kubeconfig, no operator token), pointed at the twin's API: reads
    work; code faults, image releases and the twin's own chaos kinds are dropped, named once."""
    from pytest_marathon.apiserver.kubeconfig import write_kubeconfig
    from pytest_marathon.faults import load_catalog, schedule_for
    from pytest_marathon.faults.backend_support import (
        CHAOS_MESH,
        REGISTRY,
        SYMPTOM_PROBES,
        TWIN_CHAOS,
        drop_unsupported,
        needs,
    )

    twin, server = served
    path = write_kubeconfig(tmp_path / "kubeconfig.yaml", server.url, twin.namespace)
    backend = create_backend("boutique", 3, backend="kubernetes", kubeconfig=str(path),
                             prometheus_url="http://127.0.0.1:9")
    assert backend.workloads() == twin.workloads()
    assert [r["revision"] for r in backend.rollout_history("frontend")] == [
        r["revision"] for r in twin.rollout_history("frontend")]
    with pytest.raises(Exception, match="registry"):
        backend.build_image("frontend", {"x.py": ""})
    with pytest.raises(Exception, match="--jaeger-url"):  # no Jaeger named: traces say so
        backend.traces(limit=1)
    # artifacts a Deployment, ConfigMap or Node holds read as the twin reports them
    for artifact in ("image:frontend", "env:frontend/PORT", "env:checkoutservice/PAYMENT_SERVICE_ADDR",
                     "replicas:cartservice", "limits:cartservice/memory", "probe:frontend/readiness",
                     "pod:frontend", "node:" + twin.resources("nodes")[0]["metadata"]["name"], "image:nosuch"):
        assert backend.artifact_value(artifact) == twin.artifact_value(artifact), artifact
    assert backend.topology()["edges"] == twin.topology()["edges"]
    catalog = load_catalog("boutique")
    schedule = schedule_for("boutique", "short-5", 1, catalog)
    assert any(needs(f.entry) for f in schedule.faults), "short-5 seed 1 should hold an entry a cluster lacks"
    with pytest.warns(UserWarning, match="skipped on this backend") as caught:
        kept = drop_unsupported(schedule, backend)
    assert len(caught) == 1
    assert all(not needs(f.entry) for f in kept.faults)
    assert {REGISTRY, TWIN_CHAOS, CHAOS_MESH, SYMPTOM_PROBES} >= set().union(*(needs(f.entry) for f in schedule.faults))
    # the twin's discovery lists no chaos-mesh.org group: a cluster without Chaos Mesh installed
    assert CHAOS_MESH not in backend.offers
    # what is kept is probed through the API alone, as the twin probes it
    for fault in kept.faults:
        assert backend.probe(fault.entry.probe) == twin.probe(fault.entry.probe), fault.entry.id
    with pytest.raises(Exception, match="synthetic requests"):
        backend.probe({"kind": "request", "route": "/", "signature": "x"})


def test_the_plugin_hands_the_cluster_options_to_the_backend(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from pytest_marathon.plugin_options import SETTINGS

        def test_settings(request):
            settings = request.config.stash[SETTINGS]
            assert settings.backend == "kubernetes"
            assert dict(settings.backend_options) == {
                "kubeconfig": "kc.yaml", "context": "kind-marathon",
                "prometheus_url": "http://prom:9090", "registry": "reg:5000/b"}
        """
    )
    result = pytester.runpytest_subprocess(
        "--marathon-backend=kubernetes", "--marathon-kubeconfig=kc.yaml", "--marathon-context=kind-marathon",
        "--marathon-prometheus-url=http://prom:9090", "--marathon-registry=reg:5000/b", "-p", "no:randomly")
    result.assert_outcomes(passed=1)


def test_releases_through_the_api_change_the_twin_as_the_twin_backend_does() -> None:
    """The orchestrator's releases as patches (probes, a Secret reference, an image with env and a
    strategy, a change-cause alone) leave the same deployment as `Twin.release` on a twin of the
    same seed."""
    twin = Twin(app="boutique", seed=2)
    backend = create_backend("boutique", 2, backend="kubernetes")
    releases: list[tuple[str, dict[str, Any]]] = [
        ("checkoutservice", {"probes": {"readiness": {"type": "grpc", "port": 5060}}}),
        ("frontend", {"probes": {"readiness": {"type": "tcp", "port": 8080, "periodSeconds": 7}}}),
        ("cartservice", {"env": {"REDIS_PASSWORD": "plain-text"}}),
        ("cartservice", {"env": {"REDIS_PASSWORD": {"secretKeyRef": {"name": "redis-cart-credentials",
                                                                      "key": "password"}}}}),
        ("currencyservice", {"image": "currencyservice:v9.9.9", "env": {"EXTRA": "1", "PORT": None},
                             "strategy": {"type": "Recreate"}}),
        ("adservice", {"resources": {"limits.memory": "512Mi", "requests.cpu": "250m"}}),
    ]
    try:
        for t, (target, change) in zip((10, 20, 30, 40, 50, 60), releases, strict=True):
            twin.advance_to(t)
            backend.advance_to(t)
            if "image" in change:
                twin.push_image(target, change["image"])
                backend.push_image(target, change["image"])
            expected = twin.release(target, change_cause=f"release {t}", **change)
            got = backend.release(target, change_cause=f"release {t}", **change)
            assert (got.ok, got.revision) == (expected.ok, expected.revision), target
        backend.annotate_change_cause("emailservice", "a new text")
        twin.annotate_change_cause("emailservice", "a new text")
        for target in sorted({r[0] for r in releases} | {"emailservice"}):
            ours = [{k: v for k, v in r.items() if k != "created_at"} for r in backend.rollout_history(target)]
            theirs = [{k: v for k, v in r.items() if k != "created_at"} for r in twin.rollout_history(target)]
            assert ours == theirs, target
        for artifact in ("probe:checkoutservice/readiness", "probe:frontend/readiness", "env:cartservice/REDIS_PASSWORD",
                         "image:currencyservice", "env:currencyservice/EXTRA", "env:currencyservice/PORT",
                         "limits:adservice/memory"):
            assert backend.artifact_value(artifact) == twin.artifact_value(artifact), artifact
        assert backend.resources("deployments", "currencyservice")[0]["spec"]["strategy"] == {"type": "Recreate"}
    finally:
        backend.close()


def test_a_clusters_agent_actions_are_the_requests_kubectl_sends(served: Any, tmp_path: Path) -> None:
    """Without the operator's token (a cluster's kubeconfig) scale, restart and rollback are the
    agent-grade requests the twin's API accepts from kubectl, and change the twin as the tools do."""
    from pytest_marathon.apiserver.kubeconfig import write_kubeconfig

    twin, server = served
    path = write_kubeconfig(tmp_path / "kubeconfig.yaml", server.url, twin.namespace)
    backend = create_backend("boutique", 3, backend="kubernetes", kubeconfig=str(path),
                             prometheus_url="http://127.0.0.1:9")
    assert backend.scale("emailservice", 2).ok and twin.artifact_value("replicas:emailservice") == "2"
    before = twin.rollout_history("emailservice")[-1]["revision"]
    assert backend.restart("emailservice").revision == before + 1
    assert backend.update_config("emailservice", env={"LOG_LEVEL": "debug"}).ok
    assert twin.artifact_value("env:emailservice/LOG_LEVEL") == "debug"
    result = backend.rollback("emailservice")
    assert result.ok and twin.artifact_value("env:emailservice/LOG_LEVEL") != "debug"
    with pytest.raises(BackendError, match="nothing else"):  # an agent may not write change-causes
        backend.update_config("emailservice", env={"LOG_LEVEL": "info"}, change_cause="agent: INC-1")



def test_exec_through_the_clients_websocket_stream_gives_what_the_twin_gives() -> None:
    """The kubernetes client's `stream` (websocket-client, v4.channel.k8s.io) against the twin's
    API server reads what the twin's own exec returns, exit codes and refusals included."""
    backend = create_backend("boutique", 1, backend="kubernetes")
    twin = Twin(app="boutique", seed=1)
    try:
        backend.advance_to(-200)
        twin.advance_to(-200)
        pod = twin.resources("pods", "cartservice")[0]["metadata"]["name"]
        for command in (["printenv", "REDIS_ADDR"], ["printenv", "NOPE"], ["env"]):
            assert backend.exec(pod, command) == twin.exec(pod, command)
        with pytest.raises(BackendError, match='exec: "ls": executable file not found'):
            backend.exec(pod, ["ls"])
        with pytest.raises(BackendError, match='exec: "ls": executable file not found'):
            twin.exec(pod, ["ls"])
    finally:
        backend.close()
