"""Kubernetes objects as AIOpsLab's virtualization faults change them: a Service's targetPort
(misconfig_k8s) through the Twin's API and through the real kubectl against the twin's API
server. Seen on the small app in tests/fixtures/apps/mongoshop (frontend -> geo over gRPC)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.apiserver import start_kube_api
from pytest_marathon.apiserver.kubeconfig import write_kubeconfig
from pytest_marathon.backends.base import BackendError
from pytest_marathon.twin.engine import Twin

APPS = Path(__file__).parent / "fixtures" / "apps"
KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl not installed (Debian package 'kubernetes-client'; CI machines ship v1.32)")
TARGET_PORT = "/spec/ports/0/targetPort"


def _twin(seed: int = 3, until: float = 60.0) -> Twin:
    twin = Twin("mongoshop", seed=seed, apps_dir=APPS)
    twin.advance_to(until)
    return twin


def _target_port(twin: Twin, service: str) -> Any:
    return twin.resources("services", service)[0]["spec"]["ports"][0]["targetPort"]


def _error_rate(twin: Twin, since: float) -> float:
    return max((s.e for s in twin.sli_samples(since=since)), default=0.0)


# --- through the Twin API -------------------------------------------------------------------------------
def test_a_service_pointed_at_a_port_nobody_listens_on_refuses_its_callers() -> None:
    twin = _twin()
    assert _error_rate(twin, 30.0) == 0.0
    ip = twin.runtime.cluster_ip("geo")
    result = twin.set_service_target_port("geo", 9999)
    assert result.ok and _target_port(twin, "geo") == 9999
    t = twin.now
    twin.advance_to(t + 60)
    assert _error_rate(twin, t + 5) > 0.3
    # the caller dials the Service's port and kube-proxy forwards to the pod's port 9999, where
    # nothing listens: grpc-go's dial error carries the ClusterIP and the Service port
    failed = twin.trace(twin.traces(service="frontend", since=t, errors_only=True, limit=1)[0]["trace_id"])
    client = next(s for s in failed["spans"] if s["kind"] == "SPAN_KIND_CLIENT")
    assert client["status_message"] == ('UNAVAILABLE: connection error: desc = "transport: Error while dialing: '
                                        f'dial tcp {ip}:8083: connect: connection refused"')
    twin.set_service_target_port("geo", 8083)
    t = twin.now
    twin.advance_to(t + 60)
    assert _error_rate(twin, t + 5) == 0.0


def test_only_the_port_that_differs_from_the_pods_breaks_traffic() -> None:
    twin = _twin()
    twin.set_service_target_port("geo", 8083)  # unchanged: nothing breaks
    t = twin.now
    twin.advance_to(t + 30)
    assert _error_rate(twin, t + 5) == 0.0


@pytest.mark.parametrize("bad", [0, 65536, True, "8083"])
def test_a_target_port_out_of_range_is_refused(bad: Any) -> None:
    twin = _twin(until=0.0)
    with pytest.raises(BackendError, match="between 1 and 65535"):
        twin.set_service_target_port("geo", bad)
    assert _target_port(twin, "geo") == 8083


def test_an_unknown_service_or_port_is_refused() -> None:
    twin = _twin(until=0.0)
    with pytest.raises(BackendError, match='services "nope" not found'):
        twin.set_service_target_port("nope", 9999)
    with pytest.raises(BackendError, match=r"spec.ports\[1\] does not exist"):
        twin.set_service_target_port("geo", 9999, 1)


# --- through kubectl against the twin's API server ----------------------------------------------------
class Served:
    def __init__(self, twin: Twin, kubeconfig: Path, cache: Path) -> None:
        self.twin, self.kubeconfig, self.cache = twin, kubeconfig, cache

    def kubectl(self, *args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        done = subprocess.run([KUBECTL, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache), *args],
                              capture_output=True, text=True, timeout=60, check=False, input=stdin)
        if check:
            assert done.returncode == 0, done.stderr
        return done

    def json(self, *args: str) -> dict[str, Any]:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("k8sobj")
    twin = _twin()
    with start_kube_api(twin) as server:
        kubeconfig = write_kubeconfig(folder / "kubeconfig.yaml", server.url, twin.namespace)
        yield Served(twin, kubeconfig, folder / "cache")


@needs_kubectl
def test_kubectl_json_patch_of_target_port_moves_the_traffic_and_the_endpoints(served: Served) -> None:
    # inject_virtual.py inject_misconfig_k8s: the Service's targetPort rewritten to 9999
    served.kubectl("patch", "svc", "geo", "--type=json",
                   "-p", json.dumps([{"op": "replace", "path": TARGET_PORT, "value": 9999}]))
    assert _target_port(served.twin, "geo") == 9999
    endpoints = served.json("get", "endpoints", "geo")
    assert endpoints["subsets"][0]["ports"][0]["port"] == 9999
    t = served.twin.now
    served.twin.advance_to(t + 30)
    assert _error_rate(served.twin, t + 5) > 0.3
    # the repair as an SRE types it: a strategic merge patch (Service ports merge by `port`)
    served.kubectl("patch", "svc", "geo", "-p", json.dumps({"spec": {"ports": [{"port": 8083, "targetPort": 8083}]}}))
    assert _target_port(served.twin, "geo") == 8083
    assert served.json("get", "endpoints", "geo")["subsets"][0]["ports"][0]["port"] == 8083
    t = served.twin.now
    served.twin.advance_to(t + 30)
    assert _error_rate(served.twin, t + 5) == 0.0


@needs_kubectl
def test_kubectl_apply_and_replace_of_a_service_change_its_target_port(served: Served, tmp_path: Path) -> None:
    doc = served.json("get", "svc", "geo")
    doc["spec"]["ports"][0]["targetPort"] = 9999
    manifest = tmp_path / "geo.json"
    manifest.write_text(json.dumps(doc))
    served.kubectl("apply", "-f", str(manifest))
    assert _target_port(served.twin, "geo") == 9999
    doc["spec"]["ports"][0]["targetPort"] = 8083
    manifest.write_text(json.dumps(served.json("get", "svc", "geo") | {"spec": doc["spec"]}))
    served.kubectl("replace", "-f", str(manifest))
    assert _target_port(served.twin, "geo") == 8083


@needs_kubectl
@pytest.mark.parametrize(("patch", "field"), [
    ({"spec": {"selector": {"app": "orders"}}}, "spec.selector"),
    ({"spec": {"type": "NodePort"}}, "spec.type"),
    ({"spec": {"ports": [{"port": 8083, "name": "grpc"}]}}, "spec.ports[0].name"),
    ({"metadata": {"labels": {"tier": "x"}}}, "metadata.labels"),
])
def test_kubectl_patch_of_another_service_field_is_refused_naming_it(served: Served, patch: dict, field: str) -> None:
    before = served.twin.resources("services", "geo")[0]
    done = served.kubectl("patch", "svc", "geo", "-p", json.dumps(patch), check=False)
    assert done.returncode != 0
    assert f'The Service "geo" is invalid: {field}: Forbidden: this server changes a Service\'s ports\' ' \
           "targetPort; nothing else" in done.stderr
    assert served.twin.resources("services", "geo")[0] == before


@needs_kubectl
def test_kubectl_patch_of_an_invalid_target_port_is_refused(served: Served) -> None:
    done = served.kubectl("patch", "svc", "geo", "--type=json",
                          "-p", json.dumps([{"op": "replace", "path": TARGET_PORT, "value": 70000}]), check=False)
    assert done.returncode != 0
    assert ('The Service "geo" is invalid: spec.ports[0].targetPort: Invalid value: 70000: must be between 1 '
            "and 65535, inclusive") in done.stderr
    assert _target_port(served.twin, "geo") == 8083
