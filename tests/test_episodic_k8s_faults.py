"""A `k8s` fault in the episodic mode: Kubernetes objects changed at t = 0 as AIOpsLab's kubectl
steps change them, repaired by the oracle's kubectl commands through the episode's API server.
Run on HotelReservation's twin (the SocialNetwork problems that need it come with that app)."""

from __future__ import annotations

import shutil

import pytest

from pytest_marathon.episodic import run_problem
from pytest_marathon.episodic.problems import SEARCH_PROBE, Fault, Problem

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None,
                                   reason="kubectl not installed (Debian package 'kubernetes-client')")

TARGET_PORT = Fault(
    "k8s", "misconfig_k8s", steps=(("set_service_target_port", "geo", {"target_port": 9999}),), check=SEARCH_PROBE,
    repairs=("kubectl patch service geo -n {ns} --type=json "
             "-p '[{\"op\":\"replace\",\"path\":\"/spec/ports/0/targetPort\",\"value\":8083}]'",))
NODE_SELECTOR = Fault(
    "k8s", "assign_to_non_existent_node",
    steps=(("release", "geo", {"strategy": {"type": "Recreate"}, "change_cause": "recreate"}),
           ("set_node_selector", "geo", {"selector": {"kubernetes.io/hostname": "extra-node"}})),
    check=SEARCH_PROBE, repairs=("kubectl rollout undo deployment/geo -n {ns}",))


class Submit:
    name = "submit"

    async def get_action(self, state: str) -> str:
        return "```\nsubmit()\n```"


def _problem(fault: Fault) -> Problem:
    return Problem(pid=f"{fault.name}-mitigation-test", app="hotelreservation", task="mitigation", fault=fault,
                   faulty=("geo",), analysis=("Virtualization", "Misconfiguration"))


@needs_kubectl
@pytest.mark.parametrize("fault", [TARGET_PORT, NODE_SELECTOR], ids=["target-port", "node-selector"])
def test_the_oracles_kubectl_repair_mitigates_and_submitting_at_once_does_not(fault: Fault) -> None:
    assert run_problem(_problem(fault), "oracle", seed=3).correct
    result = run_problem(_problem(fault), Submit(), seed=3)
    assert not result.correct and result.details["fault_effect_gone"] is False


def test_a_k8s_step_outside_the_allowed_calls_is_refused() -> None:
    fault = Fault("k8s", "x", steps=(("chaos_start", "geo", {}),), check=SEARCH_PROBE)
    with pytest.raises(ValueError, match="a k8s fault step is one of"):
        run_problem(_problem(fault), Submit(), seed=3)
