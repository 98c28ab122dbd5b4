"""Chaos Mesh pod-failure and container-kill on the twin, through the Twin's API and the Chaos
Mesh objects that ask for them (chaos-mesh controllers/chaosimpl/podchaos/podfailure/impl.go:
the containers' images patched to the pause image until the duration ends; containerkill/impl.go:
the named container killed by the runtime, once)."""

from __future__ import annotations

import pytest

from pytest_marathon.apiserver.chaos_mesh import ChaosSpecError, fault_of
from pytest_marathon.backends.base import BackendError
from pytest_marathon.twin.chaos import PAUSE_IMAGE
from pytest_marathon.twin.engine import Twin


def _pod(twin: Twin, deployment: str) -> dict:
    [pod] = [p for p in twin.resources("pods") if p["metadata"]["name"].startswith(deployment + "-")]
    return pod


def _status(twin: Twin, deployment: str) -> dict:
    return _pod(twin, deployment)["status"]["containerStatuses"][0]


@pytest.fixture(scope="module")
def failed() -> Twin:
    twin = Twin("hotelreservation", seed=3)
    twin.advance_to(0)
    twin.chaos_start("pod_failure", "user", count=1, duration=100.0)
    twin.advance_to(30)
    return twin


def test_pod_failure_runs_the_pause_image_in_the_same_pod_and_counts_a_restart(failed: Twin) -> None:
    status = _status(failed, "user")
    assert status["image"] == PAUSE_IMAGE == "gcr.io/google-containers/pause:latest"
    assert _pod(failed, "user")["spec"]["containers"][0]["image"] == PAUSE_IMAGE
    assert status["restartCount"] == 1
    # the app process ended on the kubelet's SIGTERM
    assert status["lastState"]["terminated"]["exitCode"] == 143
    reasons = [(e["reason"], e["message"]) for e in failed.events() if e["involvedObject"]["name"].startswith("user-")]
    assert ("Killing", "Container hotel-reserv-user definition changed, will be restarted") in reasons
    assert ("Pulling", f'Pulling image "{PAUSE_IMAGE}"') in reasons


def test_nothing_listens_in_a_failed_pod_so_its_callers_are_refused(failed: Twin) -> None:
    assert not failed.probe({"kind": "request", "route": "/user", "max_seconds": 2.5})
    assert failed.probe({"kind": "request", "route": "/hotels", "max_seconds": 2.5})


def test_pod_failure_recovers_its_image_when_the_duration_ends() -> None:
    twin = Twin("hotelreservation", seed=3)
    twin.advance_to(0)
    handle = twin.chaos_start("pod_failure", "user", count=1, duration=100.0)
    twin.advance_to(95)
    assert _status(twin, "user")["image"] == PAUSE_IMAGE
    twin.advance_to(130)
    status = _status(twin, "user")
    assert status["image"] == "localhost:5001/hotelreservation/user:latest"
    assert status["restartCount"] == 2 and "running" in status["state"]
    assert twin.probe({"kind": "request", "route": "/user", "max_seconds": 2.5})
    assert status["lastState"]["terminated"] == {**status["lastState"]["terminated"], "exitCode": 0,
                                                 "reason": "Completed"}
    twin.chaos_stop(handle)  # the object deleted after its duration: nothing more happens
    twin.advance_to(140)
    assert _status(twin, "user")["restartCount"] == 2


def test_pod_failure_without_a_duration_lasts_until_stopped() -> None:
    twin = Twin("hotelreservation", seed=3)
    twin.advance_to(0)
    handle = twin.chaos_start("pod_failure", "user")
    twin.advance_to(400)
    assert _status(twin, "user")["image"] == PAUSE_IMAGE
    twin.chaos_stop(handle)
    twin.advance_to(420)
    assert _status(twin, "user")["image"] == "localhost:5001/hotelreservation/user:latest"


def test_container_kill_restarts_the_named_container_with_exit_code_137() -> None:
    twin = Twin("hotelreservation", seed=3)
    twin.advance_to(0)
    with pytest.raises(BackendError, match="no container 'server'"):
        twin.chaos_start("container_kill", "geo", container="server")
    twin.chaos_start("container_kill", "geo", container="hotel-reserv-geo")
    twin.advance_to(10)
    status = _status(twin, "geo")
    assert status["restartCount"] == 1 and "running" in status["state"]
    assert status["lastState"]["terminated"]["exitCode"] == 137
    assert status["lastState"]["terminated"]["reason"] == "Error"
    assert status["image"] == "localhost:5001/hotelreservation/geo:latest"


def test_podchaos_actions_map_to_the_twins_kinds() -> None:
    selector = {"namespaces": ["test-hotel-reservation"], "labelSelectors": {"app": "user"}}
    assert fault_of("PodChaos", {"action": "pod-failure", "mode": "one", "duration": "100s",
                                 "selector": selector}) == ("pod_failure", "user", {"count": 1, "duration": 100.0})
    assert fault_of("PodChaos", {"action": "pod-failure", "duration": "1m30s",
                                 "selector": selector})[2]["duration"] == 90.0
    assert fault_of("PodChaos", {"action": "pod-failure", "selector": selector})[2] == {"count": 1}
    assert fault_of("PodChaos", {"action": "container-kill", "mode": "one", "duration": "200s",
                                 "containerNames": ["hotel-reserv-user"], "selector": selector}) == (
        "container_kill", "user", {"count": 1, "container": "hotel-reserv-user"})
    for spec, field in (({"action": "pod-failure", "duration": "soon"}, "spec.duration"),
                        ({"action": "container-kill"}, "spec.containerNames"),
                        ({"action": "pod-failure", "mode": "all"}, "spec.mode"),
                        ({"action": "pod-explode"}, "spec.action")):
        with pytest.raises(ChaosSpecError) as err:
            fault_of("PodChaos", {**spec, "selector": selector})
        assert err.value.field == field
