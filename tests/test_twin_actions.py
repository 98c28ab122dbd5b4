"""Agent actions on the twin carry Kubernetes semantics (through the Backend API only)."""

from __future__ import annotations

import difflib

import pytest

from pytest_marathon.backends import BackendError, create_backend
from pytest_marathon.twin.engine import Twin


@pytest.fixture
def twin() -> Twin:
    backend = create_backend("boutique", seed=3)
    backend.advance_to(0.0)
    return backend


def _env(backend: Twin, deployment: str) -> dict[str, str]:
    container = backend.resources("deployments", deployment)[0]["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in container["env"]}


def _client_errors(backend: Twin, caller: str, peer: str, code: str) -> float:
    return sum(
        s.values[-1]
        for s in backend.store.series("traces_span_metrics_calls_total")
        if s.labels["span_kind"] == "SPAN_KIND_CLIENT" and s.labels["service_name"] == caller
        and s.labels.get("server_address") == peer and s.labels.get("rpc_grpc_status_code") == code
    )


def test_rollback_after_bad_env_change_restores_env(twin: Twin) -> None:
    before = _env(twin, "checkoutservice")
    result = twin.update_config("checkoutservice", env={"PAYMENT_SERVICE_ADDR": "paymentservice:50052"},
                                change_cause="point payments at the new port")
    assert result.ok and result.revision == 2 and result.completes_at is None
    twin.advance_to(120.0)
    assert _env(twin, "checkoutservice")["PAYMENT_SERVICE_ADDR"] == "paymentservice:50052"
    history = twin.rollout_history("checkoutservice")
    assert [h["revision"] for h in history] == [1, 2]
    assert history[-1]["change_cause"] == "point payments at the new port"
    rolled = twin.rollback("checkoutservice")
    assert rolled.ok and rolled.revision == 3  # rollout undo: the old template as a new revision
    twin.advance_to(180.0)
    assert _env(twin, "checkoutservice") == before
    assert [h["revision"] for h in twin.rollout_history("checkoutservice")] == [2, 3]
    deployment = twin.resources("deployments", "checkoutservice")[0]
    assert deployment["status"]["updatedReplicas"] == 1 and deployment["status"]["availableReplicas"] == 1


def test_wrong_service_port_hangs_the_dial_until_grpc_gives_up(twin: Twin) -> None:
    """A port the Service does not define has no iptables rule, so the SYN to the ClusterIP is
    dropped (kubernetes/kubernetes#22952) and grpc-go's dial fails after its 20 s connect timeout
    (grpc-go clientconn.go minConnectTimeout) with `i/o timeout`, not a refusal."""
    twin.update_config("checkoutservice", env={"PAYMENT_SERVICE_ADDR": "paymentservice:50052"})
    twin.advance_to(600.0)
    # checkoutservice returns the error unlogged (main.go PlaceOrder); the frontend logs the chain,
    # with the dial that timed out (a port the Service does not define is blackholed)
    logs = twin.logs(service="frontend", level="error", contains="could not charge the card", limit=5)
    assert logs, "the frontend logs the failed charge"
    assert ":50052: i/o timeout" in logs[-1]["message"]
    assert not twin.logs(contains="connection refused", limit=1)
    assert not twin.probe({"kind": "request", "route": "/cart/checkout"})
    assert twin.probe({"kind": "request", "route": "/"})
    assert twin.artifact_value("env:checkoutservice/PAYMENT_SERVICE_ADDR") == "paymentservice:50052"


def test_restart_keeps_the_template_and_replaces_pods(twin: Twin) -> None:
    old_pods = {p["metadata"]["name"] for p in twin.resources("pods", "currencyservice")}
    env_before, image_before = _env(twin, "currencyservice"), twin.artifact_value("image:currencyservice")
    result = twin.restart("currencyservice")
    assert result.ok and result.revision == 2
    twin.advance_to(60.0)
    new_pods = {p["metadata"]["name"] for p in twin.resources("pods", "currencyservice")}
    assert new_pods and not new_pods & old_pods
    assert _env(twin, "currencyservice") == env_before
    assert twin.artifact_value("image:currencyservice") == image_before
    deployment = twin.resources("deployments", "currencyservice")[0]
    assert "kubectl.kubernetes.io/restartedAt" in deployment["spec"]["template"]["metadata"]["annotations"]
    assert twin.probe({"kind": "deployment_ready", "deployment": "currencyservice"})


def test_replica_one_rollout_keeps_old_pod_serving_while_new_one_is_not_ready(twin: Twin) -> None:
    old = {p["metadata"]["name"] for p in twin.resources("pods", "adservice")}
    twin.deploy_image("adservice", "adservice:v9.9.9-doesnotexist", change_cause="bump adservice")
    twin.advance_to(60.0)
    pods = twin.resources("pods", "adservice")
    assert old <= {p["metadata"]["name"] for p in pods}  # the old pod still serves
    waiting = [p["status"]["containerStatuses"][0]["state"].get("waiting", {}).get("reason") for p in pods]
    assert "ImagePullBackOff" in waiting or "ErrImagePull" in waiting
    assert twin.probe({"kind": "rpc", "service": "adservice", "method": "GetAds", "request": {"context_keys": []}})
    twin.advance_to(700.0)
    progressing = [c for c in twin.resources("deployments", "adservice")[0]["status"]["conditions"] if c["type"] == "Progressing"][0]
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert twin.rollback("adservice").ok
    twin.advance_to(760.0)
    assert twin.artifact_value("image:adservice") == twin.spec.deployments["adservice"].image


def test_scale_to_zero_makes_callers_fail_with_unavailable(twin: Twin) -> None:
    result = twin.scale("cartservice", 0)
    assert result.ok
    twin.advance_to(300.0)
    assert not [p for p in twin.resources("pods") if p["metadata"]["labels"]["app"] == "cartservice"]
    assert _client_errors(twin, "frontend", "cartservice", "14") > 0  # 14 = UNAVAILABLE
    logs = twin.logs(service="frontend", level="error", contains="code = Unavailable", limit=5)
    assert logs and "connect: connection refused" in logs[-1]["message"]  # kube-proxy REJECT, no endpoints
    failing = twin.traces(service="frontend", errors_only=True, limit=5)
    assert failing and any(
        s["status"] == "STATUS_CODE_ERROR" and s["service"] == "frontend"
        for s in twin.trace(failing[-1]["trace_id"])["spans"]
    )
    assert max(s.e for s in twin.sli_samples(since=100.0)) > 0.0
    twin.scale("cartservice", 1)
    twin.advance_to(360.0)
    assert twin.probe({"kind": "request", "route": "/cart"})


def test_bad_arguments_change_nothing(twin: Twin) -> None:
    with pytest.raises(BackendError, match="unknown deployment"):
        twin.restart("nosuchservice")
    with pytest.raises(BackendError, match="replicas"):
        twin.scale("frontend", -1)
    with pytest.raises(BackendError, match="memory quantity"):
        twin.update_config("frontend", resources={"memory": "lots"})
    with pytest.raises(BackendError, match="no rollout history"):
        twin.rollback("frontend")
    assert [h["revision"] for h in twin.rollout_history("frontend")] == [1]


def test_feature_flag_update_is_visible_in_the_configmap(twin: Twin) -> None:
    assert twin.set_feature_flag("adsEnabled", "false").ok
    data = twin.resources("configmaps", "feature-flags")[0]["data"]
    assert data["adsEnabled"] == "false"
    assert twin.artifact_value("flag:adsEnabled") == "false"


def test_flag_readers_are_the_services_whose_deployed_code_reads_the_flag(twin: Twin) -> None:
    # upstream Online Boutique has no feature flags: nothing reads the two the configmap holds
    assert twin.flag_readers("adsEnabled") == [] and twin.flag_readers("recommendationsEnabled") == []
    source = twin.source("adservice", path="service.py")["service.py"]
    old = "def GetAds(ctx, request):\n"
    new = old + "    if ctx.flag('adsEnabled', 'true') != 'true':\n        return {'ads': []}\n"
    patch = "".join(difflib.unified_diff(source.splitlines(True), source.replace(old, new).splitlines(True),
                                         "a/service.py", "b/service.py"))
    assert twin.release("adservice", patch=patch, change_cause="ads behind a flag").ok
    assert twin.flag_readers("adsEnabled") == ["adservice"]  # the template's image, rolled out or not
    assert twin.flag_readers("recommendationsEnabled") == [] and twin.flag_readers("ads") == []
    assert twin.rollback("adservice").ok
    assert twin.flag_readers("adsEnabled") == []  # the code that read it is no longer deployed


def test_a_flag_read_only_by_unit_tests_has_no_reader(twin: Twin) -> None:
    tests = twin.source("emailservice", path="test_service.py")["test_service.py"]
    patched = tests + "\n\ndef helper(ctx):\n    return ctx.flag('adsEnabled')\n"
    patch = "".join(difflib.unified_diff(tests.splitlines(True), patched.splitlines(True),
                                         "a/test_service.py", "b/test_service.py"))
    assert twin.release("emailservice", patch=patch, change_cause="tests only").ok
    assert "ctx.flag('adsEnabled')" in twin.source("emailservice", path="test_service.py")["test_service.py"]
    assert twin.flag_readers("adsEnabled") == []  # unit tests never run in a pod


def test_bad_probe_port_stalls_rollout_and_bad_liveness_restarts(twin: Twin) -> None:
    twin.release("shippingservice", probes={"readiness": {"port": 50052}}, change_cause="probe the new port")
    twin.advance_to(120.0)
    pods = twin.resources("pods", "shippingservice")
    assert len(pods) == 2 and sum(p["status"]["containerStatuses"][0]["ready"] for p in pods) == 1
    assert any("Readiness probe failed" in e["message"] for e in twin.events(object_name="shippingservice"))
    assert twin.probe({"kind": "request", "route": "/cart"})  # the old pod still serves
    twin.rollback("shippingservice")
    twin.release("emailservice", probes={"liveness": {"port": 8081}}, change_cause="probe sidecar port")
    twin.advance_to(400.0)
    restarts = [p["status"]["containerStatuses"][0]["restartCount"] for p in twin.resources("pods", "emailservice")]
    assert max(restarts) >= 2
    assert twin.artifact_value("probe:emailservice/liveness") is not None


def test_recreate_release_of_a_missing_tag_leaves_callers_unavailable_until_rollback(twin: Twin) -> None:
    old = {p["metadata"]["name"] for p in twin.resources("pods", "cartservice")}
    result = twin.release("cartservice", image="cartservice:v0.10.7", strategy={"type": "Recreate"},
                          change_cause="release cartservice v0.10.7 with Recreate")
    assert result.ok and result.revision == 2
    assert twin.resources("deployments", "cartservice")[0]["spec"]["strategy"] == {"type": "Recreate"}
    twin.advance_to(300.0)
    pods = twin.resources("pods", "cartservice")
    assert pods and not old & {p["metadata"]["name"] for p in pods}  # Recreate: the old pod is gone
    waiting = {p["status"]["containerStatuses"][0]["state"].get("waiting", {}).get("reason") for p in pods}
    assert waiting & {"ImagePullBackOff", "ErrImagePull"}
    assert _client_errors(twin, "frontend", "cartservice", "14") > 0  # 14 = UNAVAILABLE
    assert not twin.probe({"kind": "deployment_ready", "deployment": "cartservice"})
    assert not twin.probe({"kind": "request", "route": "/cart"})
    assert twin.rollback("cartservice").ok
    twin.advance_to(360.0)
    assert twin.artifact_value("image:cartservice") == twin.spec.deployments["cartservice"].image
    assert twin.probe({"kind": "request", "route": "/cart"})
    assert twin.probe({"kind": "deployment_ready", "deployment": "cartservice"})


def test_strategy_alone_is_a_new_generation_but_no_new_revision(twin: Twin) -> None:
    before = twin.resources("deployments", "productcatalogservice")[0]["metadata"]["generation"]
    result = twin.release("productcatalogservice", strategy={"type": "RollingUpdate",
                                                             "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                          change_cause="surge one pod at a time")
    deployment = twin.resources("deployments", "productcatalogservice")[0]
    assert result.ok and result.revision == 1
    assert deployment["metadata"]["generation"] == before + 1
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}


def test_bad_strategy_changes_nothing(twin: Twin) -> None:
    spec_before = twin.resources("deployments", "cartservice")[0]["spec"]
    with pytest.raises(BackendError, match="strategy.type"):
        twin.release("cartservice", image="cartservice:v0.10.7", strategy={"type": "BlueGreen"}, change_cause="x")
    with pytest.raises(BackendError, match="rollingUpdate"):
        twin.release("cartservice", strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}, change_cause="x")
    assert twin.resources("deployments", "cartservice")[0]["spec"] == spec_before


def _env_entries(backend: Twin, deployment: str) -> list[dict]:
    return backend.resources("deployments", deployment)[0]["spec"]["template"]["spec"]["containers"][0]["env"]


def test_a_literal_replaces_a_secret_reference_and_a_value_from_puts_it_back(twin: Twin) -> None:
    """`kubectl set env` semantics: one entry per name, whatever its source."""
    reference = {"secretKeyRef": {"name": "redis-cart-credentials", "key": "password"}}
    assert [e for e in _env_entries(twin, "cartservice") if e["name"] == "REDIS_PASSWORD"] == [
        {"name": "REDIS_PASSWORD", "valueFrom": reference}
    ]
    twin.release("cartservice", env={"REDIS_PASSWORD": "not-the-password"}, change_cause="inline the password")
    twin.advance_to(120.0)
    assert [e for e in _env_entries(twin, "cartservice") if e["name"] == "REDIS_PASSWORD"] == [
        {"name": "REDIS_PASSWORD", "value": "not-the-password"}
    ]
    assert twin.artifact_value("env:cartservice/REDIS_PASSWORD") == "not-the-password"
    assert not twin.probe({"kind": "request", "route": "/cart", "signature": ["WRONGPASS"]})
    twin.release("cartservice", env={"REDIS_PASSWORD": reference}, change_cause="read the password from the secret")
    twin.advance_to(240.0)
    assert [e for e in _env_entries(twin, "cartservice") if e["name"] == "REDIS_PASSWORD"] == [
        {"name": "REDIS_PASSWORD", "valueFrom": reference}
    ]
    assert twin.artifact_value("env:cartservice/REDIS_PASSWORD") == "secretKeyRef:redis-cart-credentials/password"
    assert twin.probe({"kind": "request", "route": "/cart"})


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"configMapKeyRef": {"name": "x", "key": "y"}}, "valueFrom supports only secretKeyRef"),
        ({"secretKeyRef": {"name": "redis-cart-credentials"}}, "needs a name and a key"),
        ({"secretKeyRef": {"name": "no-such-secret", "key": "password"}}, "secret 'no-such-secret' does not exist"),
    ],
)
def test_a_bad_value_from_is_refused_and_changes_nothing(twin: Twin, value: dict, problem: str) -> None:
    before = _env_entries(twin, "cartservice")
    with pytest.raises(BackendError, match=problem):
        twin.release("cartservice", env={"REDIS_PASSWORD": value}, change_cause="x")
    assert _env_entries(twin, "cartservice") == before
    assert [h["revision"] for h in twin.rollout_history("cartservice")] == [1]
