"""Kubernetes objects as AIOpsLab's faults change them: a Service's targetPort (misconfig_k8s), a
pod template's nodeSelector (assign_to_non_existent_node) and a mongod's TLS mode (auth_miss_mongodb), through the Twin's API and through the real kubectl
against the twin's API server. Seen on the small app in tests/fixtures/apps/mongoshop (frontend ->
geo over gRPC, geo (Go) on mongodb-geo, orders (Java) on mongodb-order)."""

from __future__ import annotations

import json
import re
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
from pytest_marathon.twin.mongoclient import parse_uri
from pytest_marathon.twin.mongostore import tls_mode

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


# --- mongod --tlsMode requireTLS ----------------------------------------------------------------------
GEO_ARGS = ["--auth"]
REQUIRE_TLS = ["--tlsMode", "requireTLS", "--tlsCertificateKeyFile", "/etc/tls/tls.pem"]
GO_REFUSED = ("server selection error: server selection timeout, current topology: { Type: Unknown, Servers: "
              "[{ Addr: mongodb-geo:27017, Type: Unknown, Last error: connection() error occurred during connection "
              "handshake: connection(mongodb-geo:27017[-N]) incomplete read of message header: EOF }, ] }")
_JAVA_VIEW = ("Timed out after 30000 ms while waiting to connect. Client view of cluster state is {type=UNKNOWN, "
              "servers=[{address=mongodb-order:27017, type=UNKNOWN, state=CONNECTING, exception={com.mongodb."
              "MongoSocketReadException: Prematurely reached end of stream}}]")
JAVA_REFUSED = (f"org.springframework.dao.DataAccessResourceFailureException: {_JAVA_VIEW}; nested exception is "
                f"com.mongodb.MongoTimeoutException: {_JAVA_VIEW}")


def _query(twin: Twin, service: str, request: dict[str, Any]) -> dict[str, Any]:
    """One call to a service's Query handler, as a caller pod with a minute's deadline makes it
    (geo's load-driven handler crash-loops its pod while mongod refuses it: a running one is
    waited for)."""
    from pytest_marathon.twin.runtime import _Trace
    for _ in range(60):
        pod = next((p for p in sorted(twin.cluster.pods.values(), key=lambda p: p.name)
                    if p.deployment == service and p.running and not p.terminating), None)
        if pod is not None:
            break
        twin.advance_to(twin.now + 5)
    assert pod is not None
    code, message, response, _ms = twin.runtime.serve(pod, "Query", request, _Trace("0" * 32, "r", twin.now), "",
                                                      60_000.0)
    assert code == "OK", message
    return response


def _rolled_out(twin: Twin, deployment: str) -> None:
    twin.advance_to(twin.now + 60)
    assert twin.rollout_completed_at(deployment) is not None


@pytest.mark.parametrize(("args", "mode"), [
    ([], "disabled"), (["--auth"], "disabled"), (["--tlsMode", "requireTLS"], "requireTLS"),
    (["--tlsMode=preferTLS"], "preferTLS"), (["--sslMode", "requireSSL"], "requireTLS"),
    (["--tlsMode", "requireTLS", "--tlsMode", "disabled"], "disabled"),
])
def test_mongod_reads_its_tls_mode_from_the_command_line(args: list[str], mode: str) -> None:
    assert tls_mode(args) == mode


def test_a_connection_string_asks_for_tls_with_tls_or_ssl_true() -> None:
    assert parse_uri("mongodb://h:27017/?tls=true").tls and parse_uri("mongodb://h/?ssl=TRUE").tls
    assert not parse_uri("mongodb://h:27017/?tls=false").tls and not parse_uri("h:27017").tls


def test_require_tls_refuses_plaintext_drivers_in_their_words_and_disabled_recovers() -> None:
    twin = _twin()
    assert _query(twin, "geo", {"op": "count"}).get("result") is not None
    twin.set_container_args("mongodb-geo", GEO_ARGS + REQUIRE_TLS)
    twin.set_container_args("mongodb-order", REQUIRE_TLS)
    _rolled_out(twin, "mongodb-geo")
    _rolled_out(twin, "mongodb-order")
    geo = _query(twin, "geo", {"op": "count"})
    n = int(re.search(r"27017\[-(\d+)\]", geo["message"]).group(1))
    assert (geo["message"], geo["kind"]) == (GO_REFUSED.replace("[-N]", f"[-{n}]"), "tls")
    # the driver numbers each connection: the next operation's is the next one
    assert f"mongodb-geo:27017[-{n + 1}]" in _query(twin, "geo", {"op": "count"})["message"]
    assert _query(twin, "orders", {"op": "count"})["message"] == JAVA_REFUSED
    # a client that speaks TLS is served (certificates are not modelled)
    tls_uri = "mongodb://admin:admin@mongodb-geo:27017/?authSource=admin&tls=true"
    assert _query(twin, "geo", {"op": "count", "uri": tls_uri}).get("result") is not None
    # the chart's values back to `disabled`: the clients reconnect to the new pods
    twin.set_container_args("mongodb-geo", GEO_ARGS + ["--tlsMode", "disabled"])
    _rolled_out(twin, "mongodb-geo")
    assert _query(twin, "geo", {"op": "count"}).get("result") is not None


def test_allow_and_prefer_tls_still_serve_plaintext() -> None:
    twin = _twin()
    twin.set_container_args("mongodb-geo", GEO_ARGS + ["--tlsMode", "preferTLS"])
    _rolled_out(twin, "mongodb-geo")
    assert _query(twin, "geo", {"op": "count"}).get("result") is not None


def test_container_args_must_be_strings() -> None:
    twin = _twin(until=0.0)
    with pytest.raises(BackendError, match="args must be a list of strings"):
        twin.set_container_args("mongodb-geo", ["--tlsMode", 3])  # type: ignore[list-item]


# --- nodeSelector ---------------------------------------------------------------------------------------
EXTRA_NODE = {"kubernetes.io/hostname": "extra-node"}
UNSCHEDULABLE = ("0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: "
                 "0/1 nodes are available: 1 Preemption is not helpful for scheduling.")


def _pods(twin: Twin, deployment: str) -> list[dict[str, Any]]:
    return [p for p in twin.resources("pods") if p["metadata"]["labels"]["app"] == deployment]


def _pending(twin: Twin, deployment: str) -> list[dict[str, Any]]:
    return [p for p in _pods(twin, deployment) if "nodeName" not in p["spec"]]


def test_a_node_selector_no_node_matches_leaves_the_new_pod_pending_with_the_schedulers_text() -> None:
    twin = _twin()
    t = twin.now
    twin.set_node_selector("geo", EXTRA_NODE)
    twin.advance_to(t + 120)
    (pending,) = _pending(twin, "geo")
    assert pending["status"] == {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": UNSCHEDULABLE}]}
    assert pending["spec"]["nodeSelector"] == EXTRA_NODE
    failed = [e for e in twin.events(since=t, object_name=pending["metadata"]["name"])
              if e["reason"] == "FailedScheduling"]
    assert [(e["type"], e["message"]) for e in failed] == [("Warning", UNSCHEDULABLE)]
    # a rolling update keeps the old pod serving while the new one cannot start
    assert len(_pods(twin, "geo")) == 2 and twin.rollout_completed_at("geo") is None
    assert _error_rate(twin, t + 5) == 0.0
    # removing the selector (what `rollout undo` also does) rolls a schedulable pod out
    twin.set_node_selector("geo", None)
    twin.advance_to(twin.now + 60)
    assert _pending(twin, "geo") == [] and twin.rollout_completed_at("geo") is not None
    assert "nodeSelector" not in twin.resources("deployments", "geo")[0]["spec"]["template"]["spec"]


def test_with_recreate_nothing_serves_while_the_pod_is_pending() -> None:
    twin = _twin()
    twin.release("geo", strategy={"type": "Recreate"}, change_cause="recreate")
    t = twin.now
    twin.set_node_selector("geo", EXTRA_NODE)
    twin.advance_to(t + 90)
    assert [p["status"]["phase"] for p in _pods(twin, "geo")] == ["Pending"]
    assert _error_rate(twin, t + 60) > 0.3
    twin.rollback("geo")
    twin.advance_to(twin.now + 60)
    assert _pending(twin, "geo") == [] and _error_rate(twin, twin.now - 20) == 0.0


def test_a_selector_a_node_matches_schedules_there() -> None:
    twin = _twin()
    twin.set_node_selector("geo", {"kubernetes.io/hostname": "node-a-1", "topology.kubernetes.io/zone": "zone-a"})
    twin.advance_to(twin.now + 60)
    assert _pending(twin, "geo") == [] and twin.rollout_completed_at("geo") is not None
    assert {p["spec"]["nodeName"] for p in _pods(twin, "geo")} == {"node-a-1"}


def test_scaling_down_deletes_the_pending_pod_first() -> None:
    twin = _twin()
    twin.release("geo", strategy={"type": "Recreate"}, change_cause="recreate")
    twin.set_node_selector("geo", EXTRA_NODE)
    twin.scale("geo", 2)
    twin.advance_to(twin.now + 60)
    assert len(_pending(twin, "geo")) == 2
    twin.scale("geo", 1)
    twin.advance_to(twin.now + 10)
    assert len(_pending(twin, "geo")) == 1 and len(_pods(twin, "geo")) == 1


def test_a_node_selector_must_map_strings_to_strings() -> None:
    twin = _twin(until=0.0)
    with pytest.raises(BackendError, match="nodeSelector must map label names to string values"):
        twin.set_node_selector("geo", {"kubernetes.io/hostname": 3})  # type: ignore[dict-item]


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


@needs_kubectl
def test_kubectl_patch_of_mongod_args_requires_tls_and_rollout_undo_recovers(served: Served) -> None:
    twin = served.twin
    ops = [{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": word} for word in REQUIRE_TLS]
    served.kubectl("patch", "deployment", "mongodb-geo", "--type=json", "-p", json.dumps(ops))
    container = served.json("get", "deployment", "mongodb-geo")["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == GEO_ARGS + REQUIRE_TLS
    _rolled_out(twin, "mongodb-geo")
    assert _query(twin, "geo", {"op": "count"})["kind"] == "tls"
    served.kubectl("rollout", "undo", "deployment/mongodb-geo")
    assert served.json("get", "deployment", "mongodb-geo")["spec"]["template"]["spec"]["containers"][0]["args"] \
        == GEO_ARGS
    _rolled_out(twin, "mongodb-geo")
    assert _query(twin, "geo", {"op": "count"}).get("result") is not None


@needs_kubectl
def test_kubectl_args_together_with_an_image_are_refused(served: Served) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [
        {"name": "server", "image": "mongo:5.0", "args": ["--tlsMode", "requireTLS"]}]}}}}
    container = served.json("get", "deployment", "mongodb-order")["spec"]["template"]["spec"]["containers"][0]
    patch["spec"]["template"]["spec"]["containers"][0]["name"] = container["name"]
    done = served.kubectl("patch", "deployment", "mongodb-order", "-p", json.dumps(patch), check=False)
    assert done.returncode != 0 and "args together with another template change" in done.stderr
    assert "args" not in served.json("get", "deployment", "mongodb-order")["spec"]["template"]["spec"]["containers"][0]


@needs_kubectl
def test_kubectl_patch_of_a_node_selector_leaves_a_pending_pod_and_rollout_undo_recovers(served: Served) -> None:
    twin = served.twin
    t = twin.now
    served.kubectl("patch", "deployment", "orders", "-p",
                   json.dumps({"spec": {"template": {"spec": {"nodeSelector": EXTRA_NODE}}}}))
    twin.advance_to(t + 30)
    rows = [line.split() for line in served.kubectl("get", "pods", "-l", "app=orders").stdout.splitlines()[1:]]
    assert sorted(row[2] for row in rows) == ["Pending", "Running"]
    (pending,) = _pending(twin, "orders")
    events = served.kubectl("get", "events", "--field-selector", f"involvedObject.name={pending['metadata']['name']}")
    assert "FailedScheduling" in events.stdout and UNSCHEDULABLE in events.stdout
    served.kubectl("rollout", "undo", "deployment/orders")
    twin.advance_to(twin.now + 60)
    assert _pending(twin, "orders") == [] and twin.rollout_completed_at("orders") is not None
    assert "nodeSelector" not in served.json("get", "deployment", "orders")["spec"]["template"]["spec"]
