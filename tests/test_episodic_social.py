"""AIOpsLab's SocialNetwork problems in the episodic mode.

The ids are the SocialNetwork entries of AIOpsLab's problem registry (microsoft/AIOpsLab
aiopslab/orchestrator/problems/registry.py), every one: k8s_target_port-misconfig on user-service,
text-service and post-storage-service (k8s_target_port_misconfig/target_port.py: targetPort
9090 -> 9999; Virtualization / Misconfiguration), auth_miss_mongodb (url-shorten-mongodb in
requireTLS; Application / Misconfiguration), scale_pod_zero_social_net (user-service scaled to
zero; Virtualization / Operation Error), assign_to_non_existent_node_social_net (user-service's
pods bound to the node `extra-node`; Virtualization / Dependency Problem) and the no-operation
detection."""

from __future__ import annotations

import pytest
from episode_scripts import Script, collected_ids, needs_kubectl

from pytest_marathon.episodic import run_problem
from pytest_marathon.episodic.problems import find_problem, problem_pool

pytest_plugins = ["pytester"]


SOCIAL = ("socialnetwork",)
TASKS = ("detection", "localization", "analysis", "mitigation")
AIOPSLAB_SOCIAL_IDS = (
    [f"k8s_target_port-misconfig-{task}-{n}" for n in (1, 2, 3) for task in TASKS]
    + [f"auth_miss_mongodb-{task}-1" for task in TASKS]
    + [f"scale_pod_zero_social_net-{task}-1" for task in TASKS]
    + [f"assign_to_non_existent_node_social_net-{task}-1" for task in TASKS]
    + ["noop_detection_social_network-1"]
)
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
    for n, service in enumerate(("user-service", "text-service", "post-storage-service"), start=1):
        port = pool[f"k8s_target_port-misconfig-mitigation-{n}"]
        assert port.faulty == (service,) and port.analysis == ("Virtualization", "Misconfiguration")
        assert port.fault.steps == (("set_service_target_port", service, {"target_port": 9999}),)
    auth = pool["auth_miss_mongodb-analysis-1"]
    assert auth.faulty == ("url-shorten-mongodb",) and auth.analysis == ("Application", "Misconfiguration")
    assert "requireTLS" in auth.fault.steps[0][2]["args"]
    node = pool["assign_to_non_existent_node_social_net-analysis-1"]
    assert node.faulty == ("user-service",) and node.analysis == ("Virtualization", "Dependency Problem")
    assert node.fault.steps[-1] == ("set_node_selector", "user-service", {"selector": {"kubernetes.io/hostname": "extra-node"}})
    assert pool["noop_detection_social_network-1"].fault is None
    assert not any(p.unsupported for p in pool.values())


def oracle_and_always_no(pytester: pytest.Pytester, *selection: str) -> tuple[list[str], list[str]]:
    """The problems each agent passed in one episodic run over SocialNetwork's pool."""
    result = pytester.runpytest_subprocess("--marathon-mode=episodic", "--marathon-app=socialnetwork",
                                           "--agent=oracle", "--agent=always-no", "-rA", "-q", *selection)
    passed = [line.split(" ", 1)[1] for line in result.outlines if line.startswith("PASSED ")]
    return (sorted(p.removeprefix("episode[oracle-").rstrip("]") for p in passed if p.startswith("episode[oracle-")),
            [p.removeprefix("episode[always-no-").rstrip("]") for p in passed if p.startswith("episode[always-no-")])


@needs_kubectl
def test_the_oracle_mitigates_each_fault_and_always_no_passes_only_the_noop(pytester: pytest.Pytester) -> None:
    """One problem per fault (its mitigation, the task only a repair passes) and the no-op: the
    whole pool is the slow test below."""
    oracle, always_no = oracle_and_always_no(pytester, "-k", "mitigation-1 or noop")
    assert oracle == sorted(pid for pid in AIOPSLAB_SOCIAL_IDS if pid.endswith("mitigation-1") or "noop" in pid)
    assert len(oracle) == 5
    assert always_no == ["noop_detection_social_network-1"]


@pytest.mark.slow
@needs_kubectl
def test_the_oracle_solves_every_problem_and_always_no_passes_only_the_noop(pytester: pytest.Pytester) -> None:
    oracle, always_no = oracle_and_always_no(pytester)
    assert oracle == sorted(AIOPSLAB_SOCIAL_IDS)
    assert always_no == ["noop_detection_social_network-1"]


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


TARGET_PORT_FIX = ("kubectl patch service text-service --type=json "
                   """-p '[{"op": "replace", "path": "/spec/ports/0/targetPort", "value": 9090}]'""")
NODE_SELECTOR_FIX = ("kubectl patch deployment user-service --type=json "
                     """-p '[{"op": "remove", "path": "/spec/template/spec/nodeSelector"}]'""")


@needs_kubectl
@pytest.mark.parametrize(("pid", "look", "seen", "fix"), [
    # the Service points at 9999, where nothing listens: compose-post cannot connect
    ("k8s_target_port-misconfig-mitigation-2", "kubectl get endpoints text-service", ":9999", TARGET_PORT_FIX),
    # the pod waits for a node called extra-node
    ("assign_to_non_existent_node_social_net-mitigation-1", "kubectl get events --field-selector reason=FailedScheduling",
     "didn't match Pod's node affinity/selector", NODE_SELECTOR_FIX),
    # mongod refuses plaintext clients: url-shorten-service's inserts fail
    ("auth_miss_mongodb-mitigation-1", "kubectl get deployment url-shorten-mongodb -o yaml", "requireTLS",
     "kubectl rollout undo deployment/url-shorten-mongodb"),
])
def test_each_kubernetes_object_fault_shows_in_kubectl_and_its_kubectl_repair_mitigates(
        pid: str, look: str, seen: str, fix: str) -> None:
    problem = find_problem(pid, SOCIAL)
    agent = Script(f'exec_shell("{look} -n {NAMESPACE}")', "submit()")
    result = run_problem(problem, agent, seed=3)
    assert seen in agent.seen[1], agent.seen[1]
    assert not result.correct and result.details["fault_effect_gone"] is False
    command = f"{fix} -n {NAMESPACE}".replace('"', '\\"')
    result = run_problem(problem, Script(f'exec_shell("{command}")', "submit()"), seed=3)
    assert result.correct, result.details
