"""AIOpsLab's SocialNetwork problems in the episodic mode.

The ids are the SocialNetwork entries of AIOpsLab's problem registry (microsoft/AIOpsLab
aiopslab/orchestrator/problems/registry.py) that the twin runs: the no-operation detection and
scale_pod_zero_social_net (scale_pod/scale_pod_social_net.py: user-service scaled to zero replicas;
analysis Virtualization / Operation Error; mitigation by `kubectl scale`)."""

from __future__ import annotations

import pytest
from episode_scripts import Script, collected_ids, needs_kubectl

from pytest_marathon.episodic import run_problem
from pytest_marathon.episodic.problems import find_problem, problem_pool

pytest_plugins = ["pytester"]


SOCIAL = ("socialnetwork",)
TASKS = ("detection", "localization", "analysis", "mitigation")
AIOPSLAB_SOCIAL_IDS = [f"scale_pod_zero_social_net-{task}-1" for task in TASKS] + ["noop_detection_social_network-1"]
NAMESPACE = "test-social-network"




def test_collect_only_lists_aiopslabs_social_problem_ids(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--marathon-mode=episodic", "--marathon-app=socialnetwork",
                                           "--collect-only", "-q")
    assert collected_ids(result.outlines, "oracle") == AIOPSLAB_SOCIAL_IDS


def test_the_answers_are_the_problem_modules_answers() -> None:
    pool = {p.pid: p for p in problem_pool(SOCIAL)}
    assert list(pool) == AIOPSLAB_SOCIAL_IDS
    scale = pool["scale_pod_zero_social_net-localization-1"]
    assert scale.faulty == ("user-service",)
    assert pool["scale_pod_zero_social_net-analysis-1"].analysis == ("Virtualization", "Operation Error")
    assert scale.fault.steps == (("scale", "user-service", {"replicas": 0}),)
    assert scale.fault.repairs == ("kubectl scale deployment user-service -n {ns} --replicas=1",)
    assert pool["noop_detection_social_network-1"].fault is None
    assert not any(p.unsupported for p in pool.values())


@needs_kubectl
def test_the_oracle_solves_every_problem_and_always_no_passes_only_the_noop(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--marathon-mode=episodic", "--marathon-app=socialnetwork",
                                           "--agent=oracle", "--agent=always-no", "-rA", "-q")
    passed = [line.split(" ", 1)[1] for line in result.outlines if line.startswith("PASSED ")]
    assert sorted(p for p in passed if p.startswith("episode[oracle-")) == sorted(
        f"episode[oracle-{pid}]" for pid in AIOPSLAB_SOCIAL_IDS)
    assert [p for p in passed if p.startswith("episode[always-no-")] == [
        "episode[always-no-noop_detection_social_network-1]"]


@needs_kubectl
def test_the_agent_sees_user_service_at_zero_and_submitting_at_once_does_not_mitigate() -> None:
    problem = find_problem("scale_pod_zero_social_net-mitigation-1", SOCIAL)
    agent = Script(f'exec_shell("kubectl get deployment user-service -n {NAMESPACE}")',
                   f'get_logs("{NAMESPACE}", "nginx-thrift")', "submit()")
    result = run_problem(problem, agent, seed=3)
    deployment, logs = agent.seen[1], agent.seen[2]
    assert any(line.startswith("user-service ") and " 0/0 " in line for line in deployment.splitlines())
    assert "compost_post failure: connect() failed: Connection refused" in logs
    assert not result.correct
    assert result.details["pods_healthy"] is True  # AIOpsLab's own check alone would pass it
    assert result.details["fault_effect_gone"] is False


@needs_kubectl
def test_scaling_user_service_back_with_kubectl_is_the_repair() -> None:
    problem = find_problem("scale_pod_zero_social_net-mitigation-1", SOCIAL)
    fix = f"kubectl scale deployment user-service -n {NAMESPACE} --replicas=1"
    result = run_problem(problem, Script(f'exec_shell("{fix}")', "submit()"), seed=3)
    assert result.correct, result.details
    wrong = f"kubectl scale deployment user-mention-service -n {NAMESPACE} --replicas=1"
    result = run_problem(problem, Script(f'exec_shell("{wrong}")', "submit()"), seed=3)
    assert not result.correct
