"""AIOpsLab's HotelReservation problems in the episodic mode.

The ids are the HotelReservation entries of AIOpsLab's problem registry (microsoft/AIOpsLab
aiopslab/orchestrator/problems/registry.py); the faults are what its injectors do
(aiopslab/generators/fault/inject_app.py and the scripts beside it, inject_symp.py), the symptoms
what hotelReservation's code does then (xlab-uiuc/aiopslab-applications hotelReservation/cmd/<svc>/
db.go: a failed count at start is `log.Fatal`, so the service crash-loops once it is restarted).
"""

from __future__ import annotations

import pytest
from episode_scripts import Script, collected_ids, needs_kubectl

from pytest_marathon.episodic import run_problem
from pytest_marathon.episodic.problems import find_problem, problem_pool

pytest_plugins = ["pytester"]


HOTEL = ("hotelreservation",)
TASKS = ("detection", "localization", "analysis", "mitigation")
AIOPSLAB_HOTEL_IDS = (
    [f"{stem}_mongodb-{task}-{n}" for n in (1, 2) for stem in ("revoke_auth", "user_unregistered") for task in TASKS]
    + [f"misconfig_app_hotel_res-{task}-1" for task in TASKS]
    + [f"container_kill-{task}" for task in ("detection", "localization")]
    + [f"{stem}_hotel_res-{task}-1" for stem in ("pod_failure", "pod_kill", "network_loss", "network_delay")
       for task in ("detection", "localization")]
    + ["noop_detection_hotel_reservation-1"]
    + [f"redeploy_without_PV-{task}-1" for task in ("detection", "analysis", "mitigation")]
    + [f"wrong_bin_usage-{task}-1" for task in TASKS]
)
RUNNABLE = [pid for pid in AIOPSLAB_HOTEL_IDS if not find_problem(pid, HOTEL).unsupported]
NAMESPACE = "test-hotel-reservation"




def test_collect_only_lists_aiopslabs_hotel_problem_ids(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--marathon-mode=episodic", "--marathon-app=hotelreservation",
                                           "--collect-only", "-q")
    assert sorted(collected_ids(result.outlines, "oracle")) == sorted(AIOPSLAB_HOTEL_IDS)


def test_the_answers_are_the_problem_modules_answers() -> None:
    pool = {p.pid: p for p in problem_pool(HOTEL)}
    # revoke_auth.py / storage_user_unregistered.py: the database or its service, Application level
    assert pool["revoke_auth_mongodb-localization-1"].faulty == ("mongodb-geo", "geo")
    assert pool["user_unregistered_mongodb-localization-2"].faulty == ("mongodb-rate", "rate")
    assert pool["revoke_auth_mongodb-analysis-2"].analysis == ("Application", "Authentication Issue")
    assert pool["user_unregistered_mongodb-analysis-1"].analysis == ("Application", "Network/Storage Issue")
    assert pool["misconfig_app_hotel_res-analysis-1"].analysis == ("Application", "Misconfiguration")
    # inject_symp.py targets `user` for the symptom problems
    assert {pool[f"{s}_hotel_res-localization-1"].faulty for s in ("pod_failure", "pod_kill", "network_loss",
                                                                  "network_delay")} == {("user",)}
    assert pool["network_loss_hotel_res-detection-1"].fault.steps == (("network_loss", "user", {"loss": 0.99}),)
    assert pool["network_delay_hotel_res-detection-1"].fault.steps == (("network_delay", "user", {"delay_ms": 10_000.0}),)
    assert pool["noop_detection_hotel_reservation-1"].fault is None
    # pod_failure.py / pod_kill.py: PodChaos pod-failure on `user` for 100 s; container_kill.py: geo's
    # hotel-reserv-geo; misconfig_app: geo's image set to the buggy build
    failure = (("pod_failure", "user", {"count": 1, "duration": 100.0}),)
    assert pool["pod_failure_hotel_res-detection-1"].fault.steps == pool["pod_kill_hotel_res-detection-1"].fault.steps == failure
    assert pool["container_kill-localization"].faulty == ("geo",)
    assert pool["container_kill-detection"].fault.steps == (("container_kill", "geo", {"container": "hotel-reserv-geo"}),)
    assert pool["misconfig_app_hotel_res-mitigation-1"].fault.steps == (
        ("release", "geo", {"image": "yinfangchen/geo:app3", "change_cause": ""}),)
    assert pool["misconfig_app_hotel_res-localization-1"].faulty == ("geo",)
    # wrong_bin_usage.py: profile runs geo's binary; Application / Network/Storage Issue
    assert pool["wrong_bin_usage-localization-1"].faulty == ("profile",)
    assert pool["wrong_bin_usage-analysis-1"].analysis == ("Application", "Network/Storage Issue")
    assert pool["wrong_bin_usage-mitigation-1"].fault.steps[-1] == ("set_container_command", "profile", {"command": ["geo"]})
    assert pool["wrong_bin_usage-mitigation-1"].fault.command == ("profile", "profile")
    # redeploy_without_pv.py: Virtualization / Operation Error, no localization problem; the twin
    # has no PersistentVolumes to keep
    assert pool["redeploy_without_PV-analysis-1"].analysis == ("Virtualization", "Operation Error")
    assert sorted(pid for pid, p in pool.items() if p.unsupported) == [
        f"redeploy_without_PV-{task}-1" for task in ("analysis", "detection", "mitigation")]
    assert "PersistentVolumes" in pool["redeploy_without_PV-detection-1"].unsupported


def oracle_and_always_no(pytester: pytest.Pytester, *selection: str) -> tuple[list[str], list[str], int]:
    """The problems each agent passed in one episodic run over HotelReservation's pool, and how
    many episodes were skipped."""
    # in a subprocess: an in-process run re-imports the twin's modules, and a MongoError of the new
    # modules is not caught as one of the old by episodes run later in this process
    result = pytester.runpytest_subprocess("--marathon-mode=episodic", "--marathon-app=hotelreservation",
                                           "--agent=oracle", "--agent=always-no", "-rA", "-q", *selection)
    passed = [line.split(" ", 1)[1] for line in result.outlines if line.startswith("PASSED ")]
    return (sorted(p.removeprefix("episode[oracle-").rstrip("]") for p in passed if p.startswith("episode[oracle-")),
            [p.removeprefix("episode[always-no-").rstrip("]") for p in passed if p.startswith("episode[always-no-")],
            result.parseoutcomes().get("skipped", 0))


# one problem per fault: its mitigation where AIOpsLab poses one (only a repair passes it), else
# its localization, and the no-op
FAST = ("revoke_auth_mongodb-mitigation-1", "user_unregistered_mongodb-mitigation-2", "misconfig_app_hotel_res-mitigation-1",
        "container_kill-localization", "pod_failure_hotel_res-localization-1", "pod_kill_hotel_res-localization-1",
        "network_loss_hotel_res-localization-1", "network_delay_hotel_res-localization-1",
        "wrong_bin_usage-mitigation-1", "noop_detection_hotel_reservation-1")


@needs_kubectl
def test_the_oracle_solves_one_problem_of_each_fault_and_always_no_passes_only_the_noop(pytester: pytest.Pytester) -> None:
    oracle, always_no, skipped = oracle_and_always_no(pytester, "-k", " or ".join(FAST))
    assert oracle == sorted(FAST) and set(FAST) <= set(RUNNABLE)
    assert always_no == ["noop_detection_hotel_reservation-1"]
    assert skipped == 0


@pytest.mark.slow
@needs_kubectl
def test_the_oracle_solves_every_problem_and_always_no_passes_only_the_noop(pytester: pytest.Pytester) -> None:
    oracle, always_no, skipped = oracle_and_always_no(pytester)
    assert oracle == sorted(RUNNABLE)
    assert always_no == ["noop_detection_hotel_reservation-1"]
    # redeploy_without_PV's three problems, for each agent
    assert skipped == 6 and len(RUNNABLE) == len(AIOPSLAB_HOTEL_IDS) - 3


@needs_kubectl
@pytest.mark.parametrize(("pid", "service", "text"), [
    # revoke-admin-geo-mongo.sh took readWrite on geo-db: geo's start-up count is refused (code 13)
    ("revoke_auth_mongodb-mitigation-1", "geo", "(Unauthorized) not authorized on geo-db to execute command { count: \"geo\""),
    ("revoke_auth_mongodb-mitigation-2", "rate", "(Unauthorized) not authorized on rate-db to execute command { count: \"inventory\""),
    # remove-admin-mongo.sh dropped admin: the handshake's SCRAM conversation fails (code 18)
    ("user_unregistered_mongodb-mitigation-1", "geo", "(AuthenticationFailed) Authentication failed."),
    ("user_unregistered_mongodb-mitigation-2", "rate", "(AuthenticationFailed) Authentication failed."),
])
def test_a_mongodb_fault_crash_loops_its_service_and_submitting_at_once_does_not_mitigate(
        pid: str, service: str, text: str) -> None:
    agent = Script(f'exec_shell("kubectl get pods -n {NAMESPACE}")', f'get_logs("{NAMESPACE}", "{service}")', "submit()")
    result = run_problem(find_problem(pid, HOTEL), agent, seed=3)
    pods, logs = agent.seen[1], agent.seen[2]
    assert any(line.startswith(f"{service}-") and "CrashLoopBackOff" in line for line in pods.splitlines())
    assert text in logs
    assert not result.correct
    assert result.details["pods_healthy"] is False
    assert result.details["fault_effect_gone"] is False
    assert result.details["unhealthy_pods"][0].startswith(f"{service}-")


@needs_kubectl
def test_granting_the_role_back_through_the_mongo_shell_is_the_repair() -> None:
    """revoke-mitigate-admin-geo-mongo.sh's grant, run with kubectl exec: the crash-looping geo
    comes up at its next back-off restart, as the kubelet would restart it."""
    problem = find_problem("revoke_auth_mongodb-mitigation-1", HOTEL)
    grant = problem.fault.repairs[0].replace("{ns}", NAMESPACE)
    assert grant.startswith("kubectl exec deploy/mongodb-geo -n test-hotel-reservation -- mongo admin -u admin")
    result = run_problem(problem, Script(f"exec_shell('{grant}')", "submit()"), seed=3)
    assert result.correct, result.details
    # the wrong database's role does not help
    wrong = grant.replace("'geo-db'", "'rate-db'")
    result = run_problem(problem, Script(f"exec_shell('{wrong}')", "submit()"), seed=3)
    assert not result.correct


@needs_kubectl
def test_the_buggy_geo_image_crash_loops_a_new_pod_beside_the_old_one_until_set_back() -> None:
    """inject_misconfig_app updates geo's deployment to yinfangchen/geo:app3: the rolling update's
    new pod runs the build (our reading: no credentials in its MongoDB URL) and its first count is
    refused; the old pod keeps serving (maxUnavailable rounds down to 0), so only the pods tell."""
    problem = find_problem("misconfig_app_hotel_res-mitigation-1", HOTEL)
    agent = Script(f'exec_shell("kubectl get pods -n {NAMESPACE} -o wide")', f'get_logs("{NAMESPACE}", "geo")', "submit()")
    result = run_problem(problem, agent, seed=3)
    pods, logs = agent.seen[1], agent.seen[2]
    assert sum(line.startswith("geo-") for line in pods.splitlines()) == 2
    assert any(line.startswith("geo-") and "CrashLoopBackOff" in line for line in pods.splitlines())
    assert "(Unauthorized) command count requires authentication" in logs
    assert not result.correct and result.details["fault_effect_gone"] is True
    # `kubectl set image` back to the previous image is the repair
    repair = problem.fault.repairs[0].replace("{ns}", NAMESPACE)
    assert run_problem(problem, Script(f'exec_shell("{repair}")', "submit()"), seed=3).correct


@needs_kubectl
def test_the_agent_meets_pod_failure_on_and_it_recovers_within_its_100_seconds() -> None:
    """AIOpsLab's agent starts as PodChaos pod-failure goes in (duration 100 s); the twin's
    session starts START_S later, so the duration counts from the session's start: the first
    look shows user's pod on the pause image, a look past 100 s shows its own image back."""
    problem = find_problem("pod_failure_hotel_res-detection-1", HOTEL)
    image = "-o=custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[0].image"
    looks = [f'exec_shell("kubectl get pods -n {NAMESPACE} {image}")'] * 12  # a step is 10 s
    agent = Script(*looks, 'submit("Yes")')
    assert run_problem(problem, agent, seed=3).correct
    first, last = agent.seen[1], agent.seen[12]

    def user_image(table: str) -> str:
        return next(line.split()[1] for line in table.splitlines() if line.startswith("user-"))

    assert user_image(first) == "gcr.io/google-containers/pause:latest"
    assert user_image(last) != "gcr.io/google-containers/pause:latest"


@needs_kubectl
def test_rollout_undo_also_repairs_the_buggy_image() -> None:
    """kubectl rollout undo sends the previous ReplicaSet's template as kubectl re-serialises it
    (resource.Quantity's canonical form: `1000m` CPU comes back as `1`); the API server takes it
    as that revision, as Kubernetes compares the decoded quantities."""
    problem = find_problem("misconfig_app_hotel_res-mitigation-1", HOTEL)
    agent = Script(f'exec_shell("kubectl rollout undo deployment/geo -n {NAMESPACE}")', "submit()")
    result = run_problem(problem, agent, seed=3)
    assert "rolled back" in agent.seen[1], agent.seen[1]
    assert result.correct, result.details


@needs_kubectl
def test_profile_running_geos_binary_refuses_the_search_and_submitting_at_once_does_not_mitigate() -> None:
    """inject_wrong_bin_usage: profile's command `geo`. Every pod is running and ready (AIOpsLab's
    pod check passes), but geo's program listens on 8083, so the frontend's GetProfiles is refused
    and the deployment still names geo."""
    problem = find_problem("wrong_bin_usage-mitigation-1", HOTEL)
    agent = Script(f'exec_shell("kubectl get deployment profile -n {NAMESPACE} -o yaml")',
                   f'get_logs("{NAMESPACE}", "profile")', "submit()")
    result = run_problem(problem, agent, seed=3)
    deployment, logs = agent.seen[1], agent.seen[2]
    assert "- geo" in deployment
    assert "Initializing DB connection..." in logs
    assert not result.correct
    assert result.details["pods_healthy"] is True and result.details["fault_effect_gone"] is False


@needs_kubectl
def test_a_full_path_to_profiles_binary_serves_but_is_not_aiopslabs_command() -> None:
    """WrongBinUsageMitigation checks `"profile" in container.command`: /go/bin/profile runs the
    right program, the search is answered, and still the check fails, as AIOpsLab's would."""
    problem = find_problem("wrong_bin_usage-mitigation-1", HOTEL)
    path = problem.fault.repairs[0].replace("{ns}", NAMESPACE).replace('["profile"]', '["/go/bin/profile"]')
    result = run_problem(problem, Script(f"exec_shell('{path}')", "submit()"), seed=3)
    assert not result.correct and result.details["pods_healthy"] is True
    undo = f"kubectl rollout undo deployment/profile -n {NAMESPACE}"
    assert run_problem(problem, Script(f"exec_shell('{undo}')", "submit()"), seed=3).correct
