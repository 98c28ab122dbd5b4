"""The episodic mode (AIOpsLab's problems) through pytest itself and through `run_problem`.

The AIOpsLab ids below are the astronomy_shop entries of AIOpsLab's problem registry
(microsoft/AIOpsLab aiopslab/orchestrator/problems/registry.py), the specification of the pool.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from episode_scripts import collected_ids, needs_kubectl

from pytest_marathon.bundle import read_bundle
from pytest_marathon.episodic import problem_pool, run_problem
from pytest_marathon.episodic.problems import catalog_problems, find_problem
from pytest_marathon.episodic.recording import score_episode

pytest_plugins = ["pytester"]


AIOPSLAB_ASTRONOMY_IDS = [
    f"astronomy_shop_{stem}-{task}-1"
    for stem, tasks in (
        ("ad_service_failure", ("detection", "localization")),
        ("ad_service_high_cpu", ("detection", "localization")),
        ("ad_service_manual_gc", ("detection", "localization")),
        ("cart_service_failure", ("detection", "localization")),
        ("image_slow_load", ("detection", "localization")),
        ("kafka_queue_problems", ("detection", "localization", "mitigation")),
        ("loadgenerator_flood_homepage", ("detection", "localization")),
        ("payment_service_failure", ("detection", "localization")),
        ("payment_service_unreachable", ("detection", "localization")),
        ("product_catalog_service_failure", ("detection", "localization")),
        ("recommendation_service_cache_failure", ("detection", "localization")),
    )
    for task in tasks
] + ["noop_detection_astronomy_shop-1"]



def test_collect_only_lists_aiopslabs_problem_ids(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--marathon-mode=episodic", "--marathon-app=astronomy", "--collect-only", "-q")
    assert sorted(collected_ids(result.outlines, "oracle")) == sorted(AIOPSLAB_ASTRONOMY_IDS)


def oracle_and_always_no(pytester: pytest.Pytester, *args: str) -> tuple[list[str], list[str], int, list[str]]:
    """(problems the oracle passed, problems always-no passed, skipped count, output lines)."""
    result = pytester.runpytest_subprocess("--marathon-mode=episodic", "--marathon-app=astronomy",
                                           "--agent=oracle", "--agent=always-no", "-rA", "-q", *args)
    passed = [line.split(" ", 1)[1] for line in result.outlines if line.startswith("PASSED ")]
    return (sorted(p.removeprefix("episode[oracle-").rstrip("]") for p in passed if p.startswith("episode[oracle-")),
            [p.removeprefix("episode[always-no-").rstrip("]") for p in passed if p.startswith("episode[always-no-")],
            result.parseoutcomes().get("skipped", 0), result.outlines)


RUNNABLE = [pid for pid in AIOPSLAB_ASTRONOMY_IDS if not find_problem(pid, ("astronomy",)).unsupported]
# one problem per fault: the mitigation where AIOpsLab poses one (only a repair passes it), else
# the localization (only the faulty service passes it); one detection, and the no-op
FAST = tuple(pid for pid in RUNNABLE if "-localization-" in pid and "kafka" not in pid) + (
    "astronomy_shop_kafka_queue_problems-mitigation-1", "astronomy_shop_ad_service_failure-detection-1",
    "noop_detection_astronomy_shop-1")


@needs_kubectl
def test_the_oracle_solves_one_problem_of_each_fault_and_always_no_passes_only_the_noop(pytester: pytest.Pytester) -> None:
    oracle, always_no, skipped, lines = oracle_and_always_no(pytester, "-k", " or ".join(FAST))
    assert oracle == sorted(FAST) and set(FAST) <= set(RUNNABLE)
    assert always_no == ["noop_detection_astronomy_shop-1"]
    assert skipped == 0
    assert any("accuracy per task" in line for line in lines)


@pytest.mark.slow
@needs_kubectl
def test_the_oracle_solves_every_problem_and_always_no_passes_only_the_noop(pytester: pytest.Pytester) -> None:
    oracle, always_no, skipped, lines = oracle_and_always_no(pytester)
    assert oracle == sorted(RUNNABLE)
    assert always_no == ["noop_detection_astronomy_shop-1"]
    assert skipped == 2 * (len(AIOPSLAB_ASTRONOMY_IDS) - len(RUNNABLE))
    assert any("accuracy per task" in line for line in lines)


AIOPSLAB_STYLE_AGENT = '''
class ShellAgent:
    """The shape of AIOpsLab's clients (clients/gpt.py): init_context, then get_action per turn."""

    def __init__(self):
        self.history = []

    def init_context(self, problem_desc, instructions, apis):
        self.history.append({"role": "system", "content": problem_desc + "\\n" + "\\n".join(apis)})
        self.history.append({"role": "user", "content": instructions})
        self.namespace = problem_desc.split("Namespace: ", 1)[1].split("\\n", 1)[0]

    async def get_action(self, input):
        self.history.append({"role": "user", "content": input})
        if len(self.history) == 3:
            return f"Let me look.\\n```\\nexec_shell(\\"kubectl get pods -n {self.namespace}\\")\\n```"
        crashing = [line.split()[0] for line in input.splitlines()[1:] if line.startswith("ad-")]
        return "```\\nsubmit(\\"Yes\\")\\n```" if crashing else "```\\nsubmit(\\"No\\")\\n```"
'''


@needs_kubectl
def test_an_aiopslab_style_agent_class_runs_unchanged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(shell_agent=AIOPSLAB_STYLE_AGENT)
    pid = "astronomy_shop_ad_service_failure-detection-1"
    result = pytester.runpytest_subprocess("--marathon-mode=episodic", "--agent=shell_agent:ShellAgent",
                                f"--marathon-problem={pid}", "-q")
    result.assert_outcomes(passed=1)
    folder = pytester.path / ".marathon/episodes/shell_agent_ShellAgent"
    score = json.loads((folder / f"{pid}.score.json").read_text())
    assert score == score_episode(folder / pid)
    first = read_bundle(folder / pid).stream("tool_calls")[0]
    assert first["tool"] == "exec_shell" and "kubectl get pods" in first["action"]
    assert first["observation"].split("\n", 1)[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert score["correct"] and score["steps"] == 2 and score["ttx_s"] == 10.0


class Scripted:
    """Replies from a list, then keeps asking for pods (never submits)."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.states: list[str] = []

    async def get_action(self, state: str) -> str:
        self.states.append(state)
        return self.replies.pop(0) if self.replies else '```\nexec_shell("kubectl get pods")\n```'


@needs_kubectl
def test_the_aci_refuses_what_aiopslab_refuses_and_the_step_limit_ends_the_episode() -> None:
    problem = find_problem("noop_detection_astronomy_shop-1", ("astronomy",))
    agent = Scripted([
        '```\nexec_shell("kubectl edit deployment ad")\n```',
        '```\nexec_shell("kubectl get pods | grep ad")\n```',
        '```\nexec_shell("cat /etc/passwd")\n```',
        "no code block at all",
        '```\nget_logs("astronomy", "ad")\n```',
        '```\nget_metrics("astronomy", 5)\n```',
    ])
    result = run_problem(problem, agent, max_steps=7)
    observations = [step["observation"] for step in result.trajectory]
    assert observations[0].startswith("Error: Cannot use `kubectl edit`")
    assert "pipes" in observations[1] and "(|)" in observations[1]
    assert "runs kubectl only" in observations[2]
    assert observations[3].startswith("Format validation failure")
    assert "Targeted ad request received" in observations[4] or "ad request received" in observations[4]
    table, _, export = observations[5].partition("\n\n")
    metrics = {line.split()[0]: line.split()[1:] for line in table.splitlines()[1:]}
    assert "ad" in metrics and float(metrics["ad"][0]) > 0.0
    assert export.startswith("Every series at 15 s steps over the last 5 minutes: read_me")
    assert not result.submitted and not result.correct and result.steps == 7 and result.ttx_s is None


@needs_kubectl
def test_the_flag_file_takes_only_a_change_of_variants() -> None:
    """kubectl may switch a flag's variant through the ConfigMap (the fault's own mechanism, so
    its mitigation); dropping a flag from the file is refused and changes nothing."""
    problem = find_problem("astronomy_shop_kafka_queue_problems-mitigation-1", ("astronomy",))
    agent = Scripted([
        '```\nexec_shell(\'kubectl patch configmap flagd-config -n astronomy --type merge '
        '-p "{\\"data\\": {\\"demo.flagd.json\\": \\"{\\\\\\"flags\\\\\\": {}}\\"}}"\')\n```',
        "```\nsubmit()\n```",
    ])
    result = run_problem(problem, agent)
    assert "is invalid" in result.trajectory[0]["observation"] and "must keep its flags" in result.trajectory[0]["observation"]
    assert result.submitted and not result.correct
    assert result.details["fault_effect_gone"] is False


def test_every_catalog_fault_is_a_problem_of_each_task_with_a_remedy_for_mitigation() -> None:
    pool = catalog_problems("boutique")
    from pytest_marathon.faults import load_catalog

    catalog = load_catalog("boutique")
    with_remedy = sum(1 for e in catalog.entries if e.remedy)
    assert len(pool) == 3 * len(catalog) + with_remedy
    assert len({p.pid for p in pool}) == len(pool)
    assert all(p.pid == f"boutique-{p.fault.name}-{p.task}" for p in pool if p.fault)
    assert problem_pool(("boutique",)) == []  # AIOpsLab has no Online Boutique problems


@needs_kubectl
@pytest.mark.parametrize("pid", ["boutique-code-ad-direct-lookup-mitigation", "boutique-auth-redis-rotated-mitigation",
                                 "boutique-infra-cpu-hog-cartservice-mitigation"])
def test_a_catalog_mitigation_is_solved_with_kubectl_and_not_by_submitting_at_once(pid: str) -> None:
    problem = find_problem(pid, ("boutique",))
    repaired = run_problem(problem, "oracle")
    assert repaired.correct, repaired.details
    assert all(step["action"].count("kubectl") <= 1 for step in repaired.trajectory)
    assert not run_problem(problem, "always-no").correct


@pytest.mark.parametrize(("args", "fragment"), [
    (["--agent=nobody"], "'nobody'"),
    (["--marathon-problem=nope"], "'nope'"),
    (["--marathon-max-steps=0"], "at least 1"),
])
def test_bad_episodic_options_are_usage_errors(pytester: pytest.Pytester, args: list[str], fragment: str) -> None:
    result = pytester.runpytest_subprocess("--marathon-mode=episodic", "--marathon-app=astronomy", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert fragment in result.stderr.str()


def test_an_episode_is_a_sealed_bundle_scored_from_its_records(tmp_path: Path) -> None:
    problem = find_problem("astronomy_shop_cart_service_failure-localization-1", ("astronomy",))
    result = run_problem(problem, "oracle", out_dir=tmp_path)
    bundle = read_bundle(tmp_path / problem.pid)
    assert bundle.sealed and bundle.manifest["mode"] == "episodic" and bundle.manifest["task"] == "localization"
    assert bundle.stream("reports") == [{"t": 120.0, "seq": 1, "solution": ["cart"]}]
    assert bundle.stream("schedule")[0]["faulty"] == ["cart"]
    doc = json.loads((tmp_path / f"{problem.pid}.score.json").read_text())
    assert doc == score_episode(tmp_path / problem.pid)
    assert doc["correct"] and result.correct and doc["details"] == {"Acc@1": 1.0, "Acc@3": 1.0}


def test_the_score_follows_the_recorded_checks_not_the_runner(tmp_path: Path) -> None:
    """A mitigation's verdict is a function of the checks the bundle recorded: the do-nothing
    agent's bundle holds a failed check, and the same judge passes only when both checks hold."""
    problem = find_problem("astronomy_shop_kafka_queue_problems-mitigation-1", ("astronomy",))
    assert not run_problem(problem, "always-no", out_dir=tmp_path).correct
    checks = {p["check"]: p["value"] for p in read_bundle(tmp_path / problem.pid).stream("probes")}
    assert checks["fault_effect_gone"] is False and checks["pods_healthy"] is True
    from pytest_marathon.episodic.evaluate import judge

    assert judge(problem, None, {**checks, "fault_effect_gone": True})[0]
    assert not judge(problem, None, {**checks, "pods_healthy": False, "fault_effect_gone": True})[0]


@needs_kubectl
@pytest.mark.parametrize(("gate", "code"), [("detection:50", pytest.ExitCode.OK), ("60", pytest.ExitCode.TESTS_FAILED)])
def test_the_accuracy_gate_judges_the_pool_per_task(pytester: pytest.Pytester, gate: str, code: int) -> None:
    """always-no gets the no-operation problem right and the ad failure wrong: 50 % detection."""
    result = pytester.runpytest_subprocess("--marathon-mode=episodic", "--agent=always-no",
                                "--marathon-problem=noop_detection_astronomy_shop-1",
                                "--marathon-problem=astronomy_shop_ad_service_failure-detection-1",
                                f"--marathon-min-accuracy={gate}", "--marathon-json=episodes.json", "-q")
    assert result.ret == code
    result.assert_outcomes(passed=1, xfailed=1)
    written = json.loads((pytester.path / "episodes.json").read_text())
    assert written["accuracy"] == {"always-no": {"detection": {"problems": 2, "correct": 1, "accuracy": 50.0}}}
    assert sorted(d["pid"] for d in written["episodes"]) == ["astronomy_shop_ad_service_failure-detection-1",
                                                            "noop_detection_astronomy_shop-1"]
    gate_lines = [line for line in result.outlines if "accuracy gate failed" in line]
    assert gate_lines == ([] if code == pytest.ExitCode.OK else
                          ["marathon accuracy gate failed: always-no detection: accuracy 50.0% < 60%"])


@needs_kubectl
def test_the_episode_command_runs_problems_and_rescores_their_bundles(tmp_path: Path) -> None:
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "pytest_marathon", "episode", "--agent", "always-no",
                          "--problem", "noop_detection_astronomy_shop-1",
                          "--problem", "astronomy_shop_cart_service_failure-detection-1", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 1, run.stderr
    assert run.stdout.splitlines()[-1] == f"1 of 2 right; bundles in {tmp_path / 'always-no'}"
    bundle = tmp_path / "always-no" / "noop_detection_astronomy_shop-1"
    rescored = subprocess.run([sys.executable, "-m", "pytest_marathon", "episode", "--score", str(bundle)],
                              capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(rescored.stdout) == json.loads((bundle.parent / f"{bundle.name}.score.json").read_text())
    refused = subprocess.run([sys.executable, "-m", "pytest_marathon", "score", str(bundle)],
                             capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 2 and "is an episode bundle" in refused.stderr


@needs_kubectl
def test_gpt_w_shell_asks_the_model_through_the_metering_proxy(tmp_path: Path) -> None:
    """AIOpsLab's GPT-w-Shell shape over the episode's metering proxy, with the scripted model
    double on loopback as the user's OpenAI upstream: the double sees only the proxy (it demands
    the user's key, which only the proxy holds) and the bundle's tokens are what it answered."""
    from model_double import ModelDouble
    from model_double.shell_script import ShellScript

    key = "sk-user-key-held-by-the-proxy"
    problem = find_problem("astronomy_shop_ad_service_failure-detection-1", ("astronomy",))
    with ModelDouble(script=ShellScript(), require_key=key) as double, pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_BASE_URL", double.openai_base_url)
        mp.setenv("OPENAI_API_KEY", key)
        mp.setenv("MARATHON_MODEL", "gpt-5-mini")
        result = run_problem(problem, "gpt-w-shell", out_dir=tmp_path)
        answered = [e for e in double.model_exchanges("chat") if e.status == 200]
    assert result.correct and result.steps == 2
    assert len(answered) == 2
    steps = read_bundle(tmp_path / problem.pid).stream("invocations")
    assert [s["model_calls"] for s in steps] == [1, 1]
    assert result.input_tokens == sum(e.usage[0] for e in answered)
    assert result.output_tokens == sum(e.usage[1] for e in answered)
    assert result.cost_usd == pytest.approx((0.25 * result.input_tokens + 2.0 * result.output_tokens) / 1e6, abs=1e-6)
    first = read_bundle(tmp_path / problem.pid).stream("tool_calls")[0]
    assert first["tool"] == "exec_shell" and first["observation"].startswith("NAME")


@needs_kubectl
def test_mksmc_reads_the_exports_and_tells_a_fault_from_a_quiet_run() -> None:
    """MKSMC (detection) through the interface: get_metrics, read_metrics, get_traces,
    read_traces, submit; quiet on the no-operation problem, alarmed by the ad service's CPU hog."""
    quiet = run_problem(find_problem("noop_detection_astronomy_shop-1", ("astronomy",)), "mksmc")
    hog = run_problem(find_problem("astronomy_shop_ad_service_high_cpu-detection-1", ("astronomy",)), "mksmc")
    assert (quiet.solution, hog.solution) == ("No", "Yes")
    assert [step["action"].split("\n")[1].split("(")[0] for step in hog.trajectory] == [
        "get_metrics", "read_metrics", "get_traces", "read_traces", "submit"]
    assert hog.trajectory[1]["observation"].startswith("timestamp,service,metric,value")


@needs_kubectl
def test_pdiagnose_ranks_the_service_whose_metrics_and_spans_moved() -> None:
    result = run_problem(find_problem("astronomy_shop_ad_service_high_cpu-localization-1", ("astronomy",)), "pdiagnose")
    assert result.correct and result.solution[0] == "ad" and len(result.solution) == 3


PRYING_AGENT = '''
import os
from pathlib import Path


class PryingAgent:
    """Looks for the answer where a careless harness would leave it, then answers with what it saw."""

    def __init__(self):
        self.seen = []

    def init_context(self, problem_desc, instructions, apis):
        here = Path(os.environ.get("EPISODES", "/nonexistent"))
        self.seen.append("episodes:" + ",".join(sorted(p.name for p in here.glob("*/*"))) if here.exists() else "episodes:hidden")
        import pytest_marathon
        catalog = Path(pytest_marathon.__file__).parent.parent / "fault_catalog"
        self.seen.append("catalog:" + ("listed" if catalog.exists() and any(catalog.iterdir()) else "hidden"))
        self.seen.append("parent:" + ("visible" if Path(f"/proc/{os.getppid()}/cmdline").exists() and os.getppid() > 1 else "hidden"))
        self.seen.append("desc:" + ("pid" if "astronomy_shop" in problem_desc or "adFailure" in problem_desc else "clean"))

    async def get_action(self, state):
        return "```\\nsubmit(" + repr(";".join(self.seen)).replace("'", '"') + ")\\n```"
'''


@needs_kubectl
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed (Debian package 'bubblewrap')")
def test_an_agent_class_runs_sandboxed_and_finds_no_answers(pytester: pytest.Pytester) -> None:
    """The class runs in its own bubblewrap sandbox: earlier episodes' bundles (with their answer
    keys), the package's catalog and the runner's process are out of its sight, and its problem
    text names no problem id or flag."""
    pytester.makepyfile(prying_agent=PRYING_AGENT)
    first = "noop_detection_astronomy_shop-1"
    pytester.runpytest_subprocess("--marathon-mode=episodic", "--agent=oracle", f"--marathon-problem={first}", "-q")
    episodes = pytester.path / ".marathon" / "episodes"
    assert (episodes / "oracle" / first / "schedule.jsonl").read_text()  # the answer key is on disk
    pid = "astronomy_shop_ad_service_failure-detection-1"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EPISODES", str(episodes))
        result = pytester.runpytest_subprocess("--marathon-mode=episodic", "--agent=prying_agent:PryingAgent",
                                    f"--marathon-problem={pid}", "-q")
    result.assert_outcomes(failed=1)
    score = json.loads((episodes / "prying_agent_PryingAgent" / f"{pid}.score.json").read_text())
    assert score["isolation"] == "sandbox"
    assert score["solution"] == "episodes:hidden;catalog:hidden;parent:hidden;desc:clean"
