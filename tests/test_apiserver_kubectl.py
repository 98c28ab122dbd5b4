"""The twin's Kubernetes API, tested with the clients an SRE uses: kubectl and the `kubernetes`
package. Every change is checked through the twin's own API, never through the server.

One twin and one server per module, clock at speed 0 and stepped through the clock endpoint.
Each test acts on its own deployment, so the tests do not depend on their order.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.apiserver import KubeApiServer, start_kube_api
from pytest_marathon.apiserver.clock import ClockDriver
from pytest_marathon.apiserver.kubeconfig import write_kubeconfig
from pytest_marathon.backends import create_backend

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl not installed (Debian package 'kubernetes-client'; CI machines ship v1.32)")
SEED = 1
START = -240.0  # one virtual minute after the twin's warm-up begins: every pod is up


class Served:
    def __init__(self, server: KubeApiServer, twin: Any, kubeconfig: Path, cache: Path,
                 audit: list[dict[str, Any]]) -> None:
        self.server, self.twin, self.kubeconfig, self.cache, self.audit = server, twin, kubeconfig, cache, audit

    def kubectl(self, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        done = subprocess.run([KUBECTL, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache), *args],
                              capture_output=True, text=True, timeout=timeout, check=False)
        if check:
            assert done.returncode == 0, done.stderr
        return done

    def clock(self, doc: dict[str, float] | None = None) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(f"{self.server.url}/marathon/v1/clock", method="POST" if doc else "GET",
                                         data=json.dumps(doc).encode() if doc else None)
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return reply.status, json.loads(reply.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def deployment(self, name: str) -> dict[str, Any]:
        return self.twin.resources("deployments", name)[0]

    def env(self, name: str) -> dict[str, str]:
        container = self.deployment(name)["spec"]["template"]["spec"]["containers"][0]
        return {e["name"]: e.get("value", "") for e in container["env"]}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("kubeapi")
    twin = create_backend("boutique", SEED)
    audit: list[dict[str, Any]] = []
    with start_kube_api(twin, audit=audit.append) as server:
        kubeconfig = write_kubeconfig(folder / "kubeconfig.yaml", server.url, twin.namespace)
        s = Served(server, twin, kubeconfig, folder / "cache", audit)
        status, now = s.clock({"advance_to": START})
        assert (status, now["now"]) == (200, START)
        yield s


def _rows(text: str) -> list[dict[str, str]]:
    """kubectl's column output as dicts (columns split on two or more spaces)."""
    import re

    lines = [line for line in text.splitlines() if line.strip()]
    header = re.split(r"\s{2,}", lines[0].strip())
    return [dict(zip(header, re.split(r"\s{2,}", line.strip()), strict=False)) for line in lines[1:]]


def _described(text: str) -> dict[str, str]:
    """`kubectl describe`'s `Key:  value` lines, first occurrence of each key."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition(":")
        if sep and value.strip():
            fields.setdefault(key, value.strip())
    return fields


# --- reads ------------------------------------------------------------------------------------------------------
@needs_kubectl
def test_get_pods_prints_every_app_pod_with_the_servers_columns(served: Served) -> None:
    out = served.kubectl("get", "pods", "-n", "boutique").stdout
    assert out.split("\n", 1)[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    rows = {r["NAME"]: r for r in _rows(out)}
    pods = served.twin.resources("pods")
    assert set(rows) == {p["metadata"]["name"] for p in pods}
    assert len(rows) >= len(served.twin.workloads())
    for pod in pods:
        status = pod["status"]["containerStatuses"][0]
        row = rows[pod["metadata"]["name"]]
        assert row["READY"] == f"{int(status['ready'])}/1"
        assert row["STATUS"] == ("Running" if "running" in status["state"] else status["state"]["waiting"]["reason"])
        assert row["RESTARTS"].split()[0] == str(status["restartCount"])
        if served.twin.now == START:  # created at -330 (warm-up boot): the twin's clock, not the wall's
            assert row["AGE"] == "90s"


@needs_kubectl
def test_describe_pod_shows_its_containers_and_events(served: Served) -> None:
    pod = served.twin.resources("pods", "checkoutservice")[0]
    out = served.kubectl("describe", "pod", pod["metadata"]["name"]).stdout
    fields = _described(out)
    assert fields["Name"] == pod["metadata"]["name"] and fields["Namespace"] == "boutique"
    assert fields["Image"] == pod["spec"]["containers"][0]["image"]
    # events reach describe only through the field selector on the pod's uid
    assert "Scheduled" in out and "Started container server" in out


@needs_kubectl
def test_describe_deployment_finds_its_replicaset(served: Served) -> None:
    rs = [r for r in served.twin.resources("replicasets") if r["metadata"]["labels"]["app"] == "paymentservice"]
    out = served.kubectl("describe", "deployment", "paymentservice").stdout
    assert _described(out)["NewReplicaSet"] == f"{rs[-1]['metadata']['name']} (1/1 replicas created)"
    assert "ScalingReplicaSet" in out


@needs_kubectl
def test_logs_of_a_deployment_are_its_pods_lines(served: Served) -> None:
    out = served.kubectl("logs", "deploy/cartservice", "--tail=5").stdout.splitlines()
    pod = served.twin.resources("pods", "cartservice")[0]["metadata"]["name"]
    lines = [line["message"] for line in served.twin.logs(service="cartservice", limit=10_000) if line["pod"] == pod]
    assert out == lines[-5:] and len(out) == 5


@needs_kubectl
def test_get_events_lists_the_twins_events(served: Served) -> None:
    out = served.kubectl("get", "events").stdout
    assert out.split("\n", 1)[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    reasons = {r["REASON"] for r in _rows(out)}
    assert {e["reason"] for e in served.twin.events(limit=10_000)} == reasons


@needs_kubectl
def test_get_deployments_prints_ready_up_to_date_available(served: Served) -> None:
    out = served.kubectl("get", "deployments").stdout
    assert out.split("\n", 1)[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    rows = {r["NAME"]: r for r in _rows(out)}
    assert set(rows) == set(served.twin.workloads())
    assert rows["frontend"]["READY"] == "1/1"


# --- changes ----------------------------------------------------------------------------------------------------
@needs_kubectl
def test_scale_changes_the_twins_replicas(served: Served) -> None:
    assert "deployment.apps/adservice scaled" in served.kubectl("scale", "deploy/adservice", "--replicas=2").stdout
    assert served.deployment("adservice")["spec"]["replicas"] == 2


@needs_kubectl
def test_set_env_then_rollout_undo_and_history(served: Served) -> None:
    before = served.env("frontend")
    assert "env updated" in served.kubectl("set", "env", "deploy/frontend", "ENABLE_PROFILER=1").stdout
    assert served.env("frontend") == {**before, "ENABLE_PROFILER": "1"}
    history = served.kubectl("rollout", "history", "deployment/frontend").stdout
    assert [r.split()[0] for r in history.splitlines()[2:] if r.strip()] == ["1", "2"]
    assert "rolled back" in served.kubectl("rollout", "undo", "deployment/frontend").stdout
    assert served.env("frontend") == before
    revisions = [r["revision"] for r in served.twin.rollout_history("frontend")]
    history = served.kubectl("rollout", "history", "deployment/frontend").stdout
    assert [int(r.split()[0]) for r in history.splitlines()[2:] if r.strip()] == revisions == [2, 3]


@needs_kubectl
def test_set_env_removal_and_set_image_reach_the_twin(served: Served) -> None:
    assert "DISABLE_PROFILER" in served.env("productcatalogservice")
    served.kubectl("set", "env", "deploy/productcatalogservice", "DISABLE_PROFILER-")
    assert "DISABLE_PROFILER" not in served.env("productcatalogservice")
    image = served.deployment("productcatalogservice")["spec"]["template"]["spec"]["containers"][0]["image"]
    served.kubectl("set", "image", "deploy/productcatalogservice", f"server={image.rsplit(':', 1)[0]}:v0.0.1")
    assert served.twin.artifact_value("image:productcatalogservice").endswith(":v0.0.1")


@needs_kubectl
def test_rollout_restart_and_status_follow_the_clock(served: Served) -> None:
    revision = served.twin.rollout_history("emailservice")[-1]["revision"]
    assert "restarted" in served.kubectl("rollout", "restart", "deployment/emailservice").stdout
    assert served.twin.rollout_history("emailservice")[-1]["revision"] == revision + 1
    assert KUBECTL is not None
    status = subprocess.Popen([KUBECTL, "--kubeconfig", str(served.kubeconfig), "--cache-dir", str(served.cache),
                               "rollout", "status", "deployment/emailservice", "--timeout=60s"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        now = served.clock()[1]["now"]
        while status.poll() is None and now < START + 300:
            time.sleep(0.3)
            now = served.clock({"advance_by": 10})[1]["now"]
        out, err = status.communicate(timeout=30)
    finally:
        status.kill()
    assert status.returncode == 0, err
    assert 'deployment "emailservice" successfully rolled out' in out
    assert served.twin.rollout_completed_at("emailservice") is not None


@needs_kubectl
def test_json_and_merge_patches_reach_the_twin(served: Served) -> None:
    served.kubectl("patch", "deploy/redis-cart", "--type=json", "-p",
                   '[{"op": "replace", "path": "/spec/replicas", "value": 2}]')
    assert served.deployment("redis-cart")["spec"]["replicas"] == 2
    served.kubectl("patch", "deploy/redis-cart", "--type=merge", "-p", '{"spec": {"replicas": 1}}')
    assert served.deployment("redis-cart")["spec"]["replicas"] == 1


@needs_kubectl
def test_another_spelling_of_the_same_quantity_is_no_change(served: Served) -> None:
    """`0.2` cores is `200m` and `0.125Gi` is `128Mi` (apimachinery keeps quantities decoded): a
    patch spelling them so rolls nothing out; a different value does."""
    before = served.deployment("currencyservice")
    path = "/spec/template/spec/containers/0/resources/limits"
    served.kubectl("patch", "deploy/currencyservice", "--type=json", "-p",
                   f'[{{"op": "replace", "path": "{path}", "value": {{"cpu": "0.2", "memory": "0.125Gi"}}}}]')
    after = served.deployment("currencyservice")
    assert after["metadata"]["annotations"] == before["metadata"]["annotations"]
    assert after["spec"]["template"] == before["spec"]["template"]
    served.kubectl("patch", "deploy/currencyservice", "--type=json", "-p",
                   f'[{{"op": "replace", "path": "{path}", "value": {{"cpu": "0.3", "memory": "128Mi"}}}}]')
    assert served.deployment("currencyservice")["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] \
        in ("0.3", "300m")


@needs_kubectl
def test_a_patch_the_twin_cannot_carry_is_refused_and_changes_nothing(served: Served) -> None:
    before = served.deployment("recommendationservice")
    done = served.kubectl("patch", "deploy/recommendationservice", "-p", '{"spec":{"paused":true}}', check=False)
    assert done.returncode == 1
    assert 'The Deployment "recommendationservice" is invalid: spec.paused: Forbidden' in done.stderr
    assert served.deployment("recommendationservice") == before


# --- refusals -----------------------------------------------------------------------------------------------------
@needs_kubectl
def test_reading_a_secret_is_forbidden_and_audited(served: Served) -> None:
    done = served.kubectl("get", "secret", "redis-cart-credentials", check=False)
    assert done.returncode == 1
    assert "Error from server (Forbidden)" in done.stderr
    assert "reading secrets is forbidden" in done.stderr  # the policy's own words
    assert {"verb": "get", "path": "/api/v1/namespaces/boutique/secrets/redis-cart-credentials", "status": 403} in served.audit
    listed = served.kubectl("get", "secrets", "-o", "json", check=False)
    assert listed.returncode == 1 and "credentials" not in listed.stdout  # kubectl prints an empty List
    assert any(r["verb"] == "list" and "/secrets" in r["path"] and r["status"] == 403 for r in served.audit)


@needs_kubectl
def test_other_namespaces_are_forbidden(served: Served) -> None:
    done = served.kubectl("get", "pods", "-n", "kube-system", check=False)
    assert done.returncode == 1 and "forbidden" in done.stderr
    assert served.kubectl("get", "namespaces", "-o", "name").stdout.split() == ["namespace/boutique"]


# --- the kubernetes client and the clock --------------------------------------------------------------------------
def test_kubernetes_client_lists_reads_and_patches(served: Served) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    api_client = kubernetes.config.new_client_from_config(str(served.kubeconfig))
    core, apps = kubernetes.client.CoreV1Api(api_client), kubernetes.client.AppsV1Api(api_client)
    pods = core.list_namespaced_pod("boutique").items
    assert {p.metadata.name for p in pods} == {p["metadata"]["name"] for p in served.twin.resources("pods")}
    assert {n.metadata.name for n in core.list_node().items} == {
        n["metadata"]["name"] for n in served.twin.resources("nodes")}
    assert len(core.list_namespaced_service("boutique").items) == len(served.twin.resources("services"))
    assert core.list_namespaced_event("boutique").items
    deployment = apps.read_namespaced_deployment("shippingservice", "boutique")
    assert deployment.spec.replicas == 1
    rs = apps.list_namespaced_replica_set("boutique", label_selector="app=shippingservice").items
    assert rs[0].metadata.owner_references[0].uid == deployment.metadata.uid
    apps.patch_namespaced_deployment_scale("shippingservice", "boutique", {"spec": {"replicas": 3}})
    assert served.deployment("shippingservice")["spec"]["replicas"] == 3
    apps.patch_namespaced_deployment("currencyservice", "boutique", {"spec": {"template": {"spec": {
        "containers": [{"name": "server", "env": [{"name": "LOG_LEVEL", "value": "debug"}]}]}}}})
    assert served.env("currencyservice")["LOG_LEVEL"] == "debug"
    pod = served.twin.resources("pods", "adservice")[0]["metadata"]["name"]
    assert core.read_namespaced_pod_log(pod, "boutique", tail_lines=1).strip()
    with pytest.raises(kubernetes.client.exceptions.ApiException) as refused:
        core.list_namespaced_secret("boutique")
    assert refused.value.status == 403


def test_clock_endpoint_steps_virtual_time_and_never_back(served: Served) -> None:
    now = served.clock()[1]["now"]
    assert served.clock({"advance_to": now + 10}) == (200, {"now": now + 10, "tick_seconds": 5.0})
    assert served.twin.now == now + 10
    status, doc = served.clock({"advance_to": now})
    assert status == 409 and doc["reason"] == "Conflict" and served.twin.now == now + 10


def test_the_clock_follows_the_wall_at_its_speed_and_a_token_guards_the_endpoint() -> None:
    twin = create_backend("boutique", SEED)
    with start_kube_api(twin, clock_token="s3cret") as server:
        driver = ClockDriver(server, speed=60)
        start = twin.now
        driver.start()
        time.sleep(1.0)
        driver.stop()
        assert start + 30 <= twin.now <= start + 120  # 60 virtual s per wall s, whole ticks
        def post(headers: dict[str, str]) -> int:
            request = urllib.request.Request(f"{server.url}/marathon/v1/clock", data=b'{"advance_by": 5}',
                                             method="POST", headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=30) as reply:
                    return reply.status
            except urllib.error.HTTPError as exc:
                return exc.code

        before = twin.now
        assert post({}) == 403 and twin.now == before
        assert post({"Authorization": "Bearer s3cret"}) == 200 and twin.now == before + 5


def test_serve_command_writes_a_kubeconfig_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    config = tmp_path / "kc.yaml"
    process = subprocess.Popen([sys.executable, "-m", "pytest_marathon", "serve", "--speed", "0",
                                "--kubeconfig", str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(5)]
        assert lines[0].startswith("Kubernetes API: http://127.0.0.1:"), lines
        [jaeger] = [line.split()[2] for line in lines if line.startswith("Jaeger API:")]
        url = lines[0].split()[2]
        assert f"server: {url}" in config.read_text() and "namespace: boutique" in config.read_text()
        request = urllib.request.Request(f"{url}/marathon/v1/clock", data=b'{"advance_to": -295}', method="POST")
        with urllib.request.urlopen(request, timeout=30) as reply:
            assert json.loads(reply.read())["now"] == -295.0
        with urllib.request.urlopen(f"{url}/api/v1/namespaces/boutique/pods", timeout=30) as reply:
            assert json.loads(reply.read())["kind"] == "PodList"
        with urllib.request.urlopen(f"{jaeger}/api/v3/services", timeout=30) as reply:
            assert "services" in json.loads(reply.read())
        process.send_signal(signal.SIGINT)
        out, _err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0
    assert "serve stopped (SIGINT)" in out


# --- exec ---------------------------------------------------------------------------------------------------------
@needs_kubectl
def test_exec_runs_what_the_container_has_and_fails_as_the_runtime_does(served: Served) -> None:
    """kubectl 1.32 speaks pods/exec over WebSocket (v5.channel.k8s.io): stdout comes back, a
    non-zero exit is kubectl's own exit code, a missing program is runc's error."""
    pod = served.twin.resources("pods", "cartservice")[0]["metadata"]["name"]
    env = served.env("cartservice")
    # the process sees $(REDIS_PASSWORD) expanded, as the kubelet expands dependent variables
    assert env["REDIS_ADDR"] == "redis-cart:6379,password=$(REDIS_PASSWORD)"
    done = served.kubectl("exec", pod, "--", "printenv", "REDIS_ADDR")
    assert done.stdout.startswith("redis-cart:6379,password=") and "$(" not in done.stdout
    listed = served.kubectl("exec", pod, "-c", "server", "--", "env").stdout.splitlines()
    assert f"HOSTNAME={pod}" in listed and f"REDIS_ADDR={done.stdout.strip()}" in listed
    unset = served.kubectl("exec", pod, "--", "printenv", "NO_SUCH_VARIABLE", check=False)
    assert (unset.returncode, unset.stdout) == (1, "")
    assert unset.stderr.strip() == "command terminated with exit code 1"
    missing = served.kubectl("exec", pod, "--", "ls", "/", check=False)
    assert missing.returncode == 1
    assert 'exec: "ls": executable file not found in $PATH' in missing.stderr
    wrong = served.kubectl("exec", pod, "-c", "sidecar", "--", "env", check=False)
    assert wrong.returncode == 1 and "container sidecar is not valid" in wrong.stderr
    assert served.audit[-1]["verb"] == "create" and served.audit[-1]["path"].startswith(
        f"/api/v1/namespaces/boutique/pods/{pod}/exec")


@needs_kubectl
def test_a_read_only_server_refuses_exec(served: Served) -> None:
    pod = served.twin.resources("pods", "cartservice")[0]["metadata"]["name"]
    served.server.api.read_only = "a marathon is being recorded"
    try:
        refused = served.kubectl("exec", pod, "--", "env", check=False)
    finally:
        served.server.api.read_only = None
    assert refused.returncode == 1 and "a marathon is being recorded" in refused.stderr
