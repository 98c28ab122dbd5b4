"""A container's `command` on HotelReservation: upstream's one image holds every service's binary
and `command: [<svc>]` picks one (xlab-uiuc/aiopslab-applications hotelReservation/kubernetes/*/
*-deployment.yaml, Dockerfile `go install ./cmd/...`). AIOpsLab's wrong_bin_usage sets profile's
to `geo`: geo's program starts in profile's pod and listens on GeoPort 8083 from the image's
config.json (cmd/geo/main.go), so profile's Service (port 8081) refuses the frontend. Through the
Twin's API and through the real kubectl against the twin's API server."""

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
from pytest_marathon.episodic.evaluate import command_names
from pytest_marathon.twin.engine import Twin

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (Debian package 'kubernetes-client')")
SEARCH = {"kind": "request", "route": "/hotels", "max_seconds": 2.5}
COMMAND = "/spec/template/spec/containers/0/command"


def _twin(until: float = 60.0) -> Twin:
    twin = Twin("hotelreservation", seed=3)
    twin.advance_to(until)
    return twin


def _container(twin: Twin, deployment: str) -> dict[str, Any]:
    return twin.resources("deployments", deployment)[0]["spec"]["template"]["spec"]["containers"][0]


def _pod_container(twin: Twin, deployment: str) -> dict[str, Any]:
    pods = [p for p in twin.resources("pods") if p["metadata"]["name"].startswith(deployment + "-")]
    assert len(pods) == 1
    return pods[0]["spec"]["containers"][0]


def _rolled_out(twin: Twin, deployment: str) -> None:
    twin.advance_to(twin.now + 60)
    assert twin.rollout_completed_at(deployment) is not None


def _profile_logs(twin: Twin, since: float) -> list[str]:
    return [line["message"] for line in twin.logs(service="profile", since=since, limit=1000)]


# --- through the Twin API -------------------------------------------------------------------------------
def test_the_manifests_command_is_in_the_pod_spec_and_absent_where_no_manifest_sets_one() -> None:
    twin = _twin(until=0.0)
    assert _container(twin, "profile")["command"] == ["profile"]
    assert _pod_container(twin, "geo")["command"] == ["geo"]
    assert "command" not in _container(twin, "mongodb-geo")  # the mongo image's entrypoint
    boutique = Twin("boutique", seed=3)
    assert all("command" not in c for d in boutique.resources("deployments")
               for c in d["spec"]["template"]["spec"]["containers"])


def test_geos_program_in_profiles_pod_starts_as_geo_listens_on_8083_and_profiles_callers_are_refused() -> None:
    twin = _twin()
    assert twin.probe(SEARCH)
    t = twin.now
    result = twin.set_container_command("profile", ["geo"])
    assert result.ok and _container(twin, "profile")["command"] == ["geo"]
    _rolled_out(twin, "profile")
    # geo's start-up: its MongoDB address is the config's mongodb-geo:27017 (profile's env names
    # none of geo's), the dial succeeds and it registers; profile logs nothing of the kind
    logs = _profile_logs(twin, t)
    assert logs[:2] == ["Initializing DB connection...", "New session successfull..."]
    assert "Successfully registered in consul" in logs
    # no probes: the pod runs and is ready, as upstream's; AIOpsLab's pod check sees nothing wrong
    assert _pod_container(twin, "profile")["command"] == ["geo"]
    assert all(s.get("ready") for p in twin.resources("pods") for s in p["status"]["containerStatuses"])
    assert not twin.probe(SEARCH)
    t = twin.now
    twin.advance_to(t + 30)
    failed = twin.trace(twin.traces(service="frontend", since=t, errors_only=True, limit=1)[0]["trace_id"])
    client = next(s for s in failed["spans"] if s["name"] == "profile.Profile/GetProfiles")
    ip = twin.runtime.cluster_ip("profile")
    assert client["status_message"] == ('UNAVAILABLE: connection error: desc = "transport: Error while dialing: '
                                        f'dial tcp {ip}:8081: connect: connection refused"')
    # the command back: profile's code serves again
    twin.set_container_command("profile", ["profile"])
    _rolled_out(twin, "profile")
    twin.advance_to(twin.now + 10)
    assert twin.probe(SEARCH)


def test_a_binary_is_found_by_its_name_on_the_path_or_its_full_path() -> None:
    twin = _twin()
    twin.set_container_command("profile", ["/go/bin/geo"])
    _rolled_out(twin, "profile")
    assert not twin.probe(SEARCH)
    twin.set_container_command("profile", ["/go/bin/profile"])
    _rolled_out(twin, "profile")
    twin.advance_to(twin.now + 10)
    assert twin.probe(SEARCH)
    # AIOpsLab's mitigation check wants the word `profile` in the command, not a path to it
    assert not command_names(twin, "profile", "profile")
    twin.set_container_command("profile", ["profile"])
    assert command_names(twin, "profile", "profile")


@pytest.mark.parametrize(("deployment", "command", "message"), [
    ("profile", ["./geo"], "names no program of the image"),
    ("profile", ["mongod"], "names no program of the image"),
    ("mongodb-geo", ["geo"], "runs its image's entrypoint"),
    ("profile", [], "command must be a non-empty list of strings"),
    ("profile", ["geo", 3], "command must be a non-empty list of strings"),
    ("nope", ["geo"], "unknown deployment 'nope'"),
])
def test_a_command_the_twin_cannot_run_is_refused_and_nothing_changes(deployment: str, command: list[Any],
                                                                        message: str) -> None:
    twin = _twin(until=0.0)
    with pytest.raises(BackendError, match=message):
        twin.set_container_command(deployment, command)
    assert _container(twin, "profile")["command"] == ["profile"]


def test_a_boutique_deployment_takes_no_command() -> None:
    twin = Twin("boutique", seed=3)
    with pytest.raises(BackendError, match="runs its image's entrypoint"):
        twin.set_container_command("frontend", ["frontend"])


# --- through kubectl against the twin's API server ----------------------------------------------------
class Served:
    def __init__(self, twin: Twin, kubeconfig: Path, cache: Path) -> None:
        self.twin, self.kubeconfig, self.cache = twin, kubeconfig, cache

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        done = subprocess.run([KUBECTL, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache), *args],
                              capture_output=True, text=True, timeout=60, check=False)
        if check:
            assert done.returncode == 0, done.stderr
        return done

    def command(self, deployment: str) -> Any:
        doc = json.loads(self.kubectl("get", "deployment", deployment, "-o", "json").stdout)
        return doc["spec"]["template"]["spec"]["containers"][0].get("command")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("command")
    twin = _twin()
    with start_kube_api(twin) as server:
        kubeconfig = write_kubeconfig(folder / "kubeconfig.yaml", server.url, twin.namespace)
        yield Served(twin, kubeconfig, folder / "cache")


@needs_kubectl
def test_kubectl_json_patch_of_the_command_runs_geo_and_rollout_undo_brings_profile_back(served: Served) -> None:
    served.kubectl("patch", "deployment", "profile", "--type=json",
                   "-p", json.dumps([{"op": "replace", "path": COMMAND, "value": ["geo"]}]))
    assert served.command("profile") == ["geo"]
    _rolled_out(served.twin, "profile")
    assert not served.twin.probe(SEARCH)
    served.kubectl("rollout", "undo", "deployment/profile")
    assert served.command("profile") == ["profile"]
    _rolled_out(served.twin, "profile")
    served.twin.advance_to(served.twin.now + 10)
    assert served.twin.probe(SEARCH)


@needs_kubectl
def test_kubectl_command_together_with_an_image_and_an_unknown_program_are_refused(served: Served) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [
        {"name": "hotel-reserv-profile", "image": "yinfangchen/hotelreservation:latest", "command": ["geo"]}]}}}}
    done = served.kubectl("patch", "deployment", "profile", "-p", json.dumps(patch), check=False)
    assert done.returncode != 0 and "a command together with another template change" in done.stderr
    done = served.kubectl("patch", "deployment", "profile", "--type=json",
                          "-p", json.dumps([{"op": "replace", "path": COMMAND, "value": ["./profile"]}]), check=False)
    assert done.returncode != 0 and "names no program of the image" in done.stderr
    assert served.command("profile") == ["profile"]
