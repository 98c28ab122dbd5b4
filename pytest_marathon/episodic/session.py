"""One episode: a problem's fault under the app's load, an agent acting through the ACI step by
step, and the task's evaluator (AIOpsLab's Orchestrator.init_problem / start_problem, rewritten
for the twin's virtual time), recorded as a sealed bundle and scored from it.

Time: the fault goes in at t = 0 after the twin's warm-up, the session starts at START_S (the
symptoms have had two scrape windows to show), every step costs STEP_S virtual seconds, and TTx is
the virtual time from the session's start to the submission. A mitigation is judged SETTLE_S after
the submission, so a repair that has not taken hold yet is not counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_marathon.backends import create_backend
from pytest_marathon.episodic.aci import Interface, ParseError, parse_reply
from pytest_marathon.episodic.evaluate import mitigation_checks
from pytest_marathon.episodic.problems import K8S_STEPS, Problem
from pytest_marathon.episodic.recording import (
    open_recorder,
    problem_record,
    score_episode,
    write_score,
)

START_S = 120.0
STEP_S = 10.0
SETTLE_S = 60.0
DEFAULT_MAX_STEPS = 20  # AIOpsLab's largest step limit in its evaluation (§3.5, Figure 5)
ACTION_TIMEOUT_S = 120.0
FIRST_STATE = "Please take the next action"
OBSERVATION_RECORDED = 4000  # characters of each observation kept in the bundle
#: Usage of a step taken without the metering proxy (an agent that asks no model through it).
NO_USAGE = {"model_calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
DEFAULT_MAX_COST_USD = 8.0
#: the marathon's agents that run as programs over MCP, by the names --agent gives them there
MCP_PRESETS = ("codex", "claude-code")


@dataclass
class EpisodeResult:
    pid: str
    app: str
    task: str
    agent: str
    seed: int
    correct: bool
    details: dict[str, Any]
    solution: Any
    submitted: bool
    steps: int
    ttx_s: float | None
    wall_s: float
    in_chars: int
    out_chars: int
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    bundle: str | None = None
    trajectory: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def task_description(problem: Problem, namespace: str, workloads: list[str]) -> str:
    """What the agent is told (AIOpsLab's task_desc, with the app summary the twin can give)."""
    goal = {
        "detection": "detect anomalies in a deployed service",
        "localization": "localize the faulty components of a deployed service",
        "analysis": "analyse the root cause of a fault in a deployed service",
        "mitigation": "mitigate the anomalies of a deployed service",
    }[problem.task]
    return (f"You are an expert DevOps engineer assigned to {goal}.\n\n"
            f"Service Details:\nApplication: {problem.app}\nNamespace: {namespace}\n"
            f"Workloads: {', '.join(workloads)}\n\n"
            "You will begin by analyzing the service's state and telemetry, and then submit your solution.")


def instructions() -> str:
    return ("You will respond with one of the above APIs as your next action.\n"
            "Please respond in the following format in a markdown code block:\n"
            "```\n<API_NAME>(<API_PARAM1>, <API_PARAM2> ...)\n```\n"
            "Please respond with only a single API call (a.k.a., action) per turn without any additional "
            "words, labels, or prefixes.")


def _session_timed(params: Any) -> dict[str, Any]:
    """A timed fault's duration counted from the session's start: AIOpsLab's agent starts as the
    fault goes in (pod_failure's 100 s are the agent's first 100 s), the twin's session START_S
    after it, so the twin's fault lasts START_S longer and the agent meets it on, as there."""
    params = dict(params)
    if "duration" in params:
        params["duration"] = float(params["duration"]) + START_S
    return params


class _Injector:
    """Puts the problem's fault in place at t = 0 and keeps a catalog fault's orchestrator going."""

    def __init__(self, backend: Any, problem: Problem, seed: int) -> None:
        self.backend = backend
        self.problem = problem
        self.orchestrator: Any = None
        self.entry: Any = None
        fault = problem.fault
        if fault is not None and fault.kind == "catalog":
            from pytest_marathon.faults import (
                Orchestrator,
                Scenario,
                Schedule,
                ScheduledFault,
                load_catalog,
            )

            self.entry = load_catalog(problem.app).get(fault.name)
            never = 1e9
            scenario = Scenario("episode", "", 0.0, never, 0.0, 1, 1.0, 1.0, 1.0, 1.0, 1)
            self.orchestrator = Orchestrator(backend, Schedule(problem.app, scenario, seed,
                                                               (ScheduledFault("f01", self.entry, 0.0, never),)))

    def advance_to(self, t: float) -> None:
        backend, fault = self.backend, self.problem.fault
        if fault is not None and fault.kind != "catalog" and backend.now < 0.0 <= t:
            backend.advance_to(0.0)
            self._inject(fault)
        while self.orchestrator is not None and backend.now + backend.tick_seconds <= t + 1e-9:
            self.orchestrator.step(backend.now)
            backend.advance_to(backend.now + backend.tick_seconds)
        backend.advance_to(t)

    def _inject(self, fault: Any) -> None:
        """A flag, chaos or k8s fault goes in at once at t = 0 (a catalog fault's orchestrator
        injects its own)."""
        backend = self.backend
        if fault.kind == "flag":
            backend.set_feature_flag(fault.name, fault.value)
        elif fault.kind == "chaos":
            for kind, target, params in fault.steps:
                backend.chaos_start(kind, target, **_session_timed(params))
        elif fault.kind == "k8s":
            for method, target, params in fault.steps:
                if method not in K8S_STEPS:
                    raise ValueError(f"a k8s fault step is one of {', '.join(K8S_STEPS)}, not {method!r}")
                getattr(backend, method)(target, **dict(params))

    def finish(self) -> None:
        if self.orchestrator is not None:
            self.orchestrator.finish()


def _load_agent(agent: Any, problem: Problem) -> Any:
    if hasattr(agent, "get_action"):
        return agent
    from pytest_marathon.episodic.agents import make_agent

    return make_agent(str(agent), problem)


def run_problem(problem: Problem, agent: Any, *, seed: int = 1, max_steps: int = DEFAULT_MAX_STEPS,
                out_dir: Path | None = None, agent_name: str | None = None, sign_key: Any = None,
                max_cost_usd: float | None = DEFAULT_MAX_COST_USD) -> EpisodeResult:
    """Run one episode, record it and score it from its bundle; with `out_dir` the bundle stays
    there as `<pid>/` beside its score document `<pid>.score.json`."""
    started = time.perf_counter()
    if isinstance(agent, str) and is_marathon_agent(agent):
        from pytest_marathon.episodic.external import play_external

        runner = play_external(problem, agent, seed, max_steps, max_cost_usd,
                               hidden=(out_dir.resolve().parent,) if out_dir is not None else ())
        return _record(problem, agent_name or agent, seed, out_dir, sign_key, started, runner.isolation, runner)
    # the built-in model agent and a user's class (which may ask a model) go through the
    # episode's metering proxy; the other built-ins ask no model
    meter = None
    if agent == "gpt-w-shell" or (isinstance(agent, str) and ":" in agent):
        from pytest_marathon.metering.prices import load_price_table
        from pytest_marathon.metering.proxy import MeteringProxy

        meter = MeteringProxy(load_price_table(None), max_cost_usd)
    try:
        if agent == "gpt-w-shell":
            from pytest_marathon.episodic.gpt_shell import GptShellAgent

            player: Any = GptShellAgent(meter.base_urls["openai"])
        elif meter is not None:
            # a user's class: in its own sandboxed process, the episodes folder out of its sight
            from pytest_marathon.episodic.isolated import IsolatedAgent

            player = IsolatedAgent(agent, model_base_urls=dict(meter.base_urls), timeout_s=ACTION_TIMEOUT_S,
                                   hidden=(out_dir.resolve().parent,) if out_dir is not None else ())
        else:
            player = _load_agent(agent, problem)
    except BaseException:
        if meter is not None:
            meter.close()
        raise
    name = agent_name or getattr(player, "name", type(player).__name__)
    try:
        return _record(problem, name, seed, out_dir, sign_key, started, getattr(player, "isolation", "in-process"),
                       lambda recorder, scratch: _play(problem, player, seed, max_steps, recorder, scratch, meter))
    finally:
        closing = getattr(player, "close", None)
        if closing is not None and not inspect.iscoroutinefunction(closing):
            closing()
        if meter is not None:
            meter.close()


def agent_folder(spec: str) -> str:
    """The folder name of an agent's episodes: `module:Class` -> `module_Class`; a `cmd:` line
    (quotes, slashes, spaces) -> its safe characters and a digest of the whole line."""
    name = spec.replace(":", "_")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")
    if safe == name:
        return name
    return f"{safe[:48]}-{hashlib.sha256(spec.encode()).hexdigest()[:10]}"


def is_marathon_agent(spec: str) -> bool:
    """An agent the marathon runs as a program over MCP: its CLI presets and `cmd:` programs."""
    from pytest_marathon.agents.registry import COMMAND_PREFIX

    return spec in MCP_PRESETS or spec.startswith(COMMAND_PREFIX)


def _record(problem: Problem, name: str, seed: int, out_dir: Path | None, sign_key: Any, started: float,
            isolation: str, play: Callable[[Any, Path], list[dict[str, Any]]]) -> EpisodeResult:
    with tempfile.TemporaryDirectory(prefix="episode-") as scratch:
        folder = (out_dir or Path(scratch) / "bundles") / problem.pid
        if out_dir is not None and folder.exists():
            shutil.rmtree(folder)  # a rerun of the problem replaces its bundle
        recorder = open_recorder(folder, problem, name, seed, START_S, sign_key, isolation=isolation)
        with recorder:
            recorder.append("schedule", problem_record(problem))
            trajectory = play(recorder, Path(scratch))
        score = score_episode(folder)
        if out_dir is not None:
            write_score(folder, score)
    return EpisodeResult(
        pid=problem.pid, app=problem.app, task=problem.task, agent=name, seed=seed, correct=score["correct"],
        details=score["details"], solution=score["solution"], submitted=score["submitted"], steps=score["steps"],
        ttx_s=score["ttx_s"], wall_s=round(time.perf_counter() - started, 3), in_chars=score["in_chars"],
        out_chars=score["out_chars"], input_tokens=score["input_tokens"], output_tokens=score["output_tokens"],
        cost_usd=score["cost_usd"], bundle=str(folder) if out_dir is not None else None, trajectory=trajectory,
    )


@dataclass
class World:
    """An episode's running system: the twin with its fault, its Kubernetes API server, and the
    ACI over both; `locked` runs a read under the lock the API server's requests hold."""

    backend: Any
    injector: _Injector
    aci: Interface
    lock: threading.RLock
    workloads: list[str]

    def locked(self, body: Any) -> Any:
        with self.lock:
            return body()

    def step(self) -> None:
        """One step's worth of virtual time (after an action)."""
        with self.lock:
            self.injector.advance_to(self.backend.now + STEP_S)


@contextlib.contextmanager
def episode_world(problem: Problem, seed: int, scratch: Path, recorder: Any) -> Iterator[World]:
    """The twin run to the session's start with the fault in; on leaving, a mitigation's checks
    SETTLE_S later and the service level are recorded."""
    from pytest_marathon.apiserver import start_kube_api
    from pytest_marathon.apiserver.kubeconfig import write_kubeconfig

    backend = create_backend(problem.app, seed)
    lock = threading.RLock()
    injector = _Injector(backend, problem, seed)
    injector.advance_to(START_S)

    def locked(body: Any) -> Any:
        with lock:
            return body()

    with start_kube_api(backend, lock=lock) as server:
        kubeconfig = write_kubeconfig(scratch / "kubeconfig.yaml", server.url, backend.namespace)
        aci = Interface(backend, backend.namespace, kubeconfig, scratch / "cache", run_locked=locked)
        yield World(backend, injector, aci, lock, locked(backend.workloads))
        with lock:
            if problem.task == "mitigation":
                injector.advance_to(backend.now + SETTLE_S)
                for check, value in sorted(mitigation_checks(problem, backend, injector.entry).items()):
                    recorder.append("probes", {"t": backend.now, "check": check, "value": value})
            for sample in backend.sli_samples(since=0.0):
                recorder.append("sli", {"t": sample.t, "q": sample.q, "e": sample.e, "l": sample.l})
            injector.finish()


def _play(problem: Problem, player: Any, seed: int, max_steps: int, recorder: Any, scratch: Path,
          meter: Any) -> list[dict[str, Any]]:
    trajectory: list[dict[str, Any]] = []
    with episode_world(problem, seed, scratch, recorder) as world:
        backend, aci = world.backend, world.aci
        apis = dict(line.split(" -> ", 1) if " -> " in line else (line, "") for line in
                    aci.documentation(problem.task).splitlines())
        if hasattr(player, "init_context"):
            player.init_context(task_description(problem, backend.namespace, world.workloads),
                                instructions(), apis)
        state = FIRST_STATE
        loop = asyncio.new_event_loop()
        try:
            for step in range(1, max_steps + 1):
                t = backend.now
                asked = time.perf_counter()
                if meter is not None:
                    meter.begin_invocation(step)
                reply, error = None, ""
                try:
                    reply = _ask(loop, player, state)
                except Exception as exc:  # noqa: BLE001 - a crashing agent ends its episode, recorded
                    error = f"{type(exc).__name__}: {exc}"
                usage = meter.end_invocation().record_fields() if meter is not None else dict(NO_USAGE)
                recorder.append("invocations", {
                    "n": step, "t": t, "status": "error" if error else "ok", "detail": error[:2000],
                    "wall_s": round(time.perf_counter() - asked, 6), "in_chars": len(state),
                    "out_chars": len(reply or ""), **usage})
                if reply is None:
                    trajectory.append({"step": step, "t": t, "error": error})
                    break
                try:
                    call = parse_reply(reply)
                except ParseError as exc:
                    call, observation, verdict = None, str(exc), "parse-error"
                else:
                    if call.api == "submit":
                        solution = call.args[0] if len(call.args) == 1 else list(call.args) or None
                        recorder.append("reports", {"t": t, "seq": step, "solution": solution})
                        trajectory.append({"step": step, "t": t, "action": reply, "observation": "submitted"})
                        break
                    observation = aci.perform(call)
                    verdict = "error" if observation.startswith("Error") else "ok"
                recorder.append("tool_calls", {
                    "seq": step, "t": t, "tool": call.api if call else None,
                    "args": list(call.args) if call else None, "verdict": verdict, "action": reply,
                    "observation": observation[:OBSERVATION_RECORDED], "result_chars": len(observation)})
                trajectory.append({"step": step, "t": t, "action": reply, "observation": observation[:2000]})
                world.step()
                state = f"{observation}\nPlease take the next action"
        finally:
            closing = getattr(player, "close", None)
            if closing is not None and inspect.iscoroutinefunction(closing):
                loop.run_until_complete(closing())
            loop.close()
    return trajectory


def _ask(loop: asyncio.AbstractEventLoop, player: Any, state: str) -> str:
    answer = player.get_action(state)
    if inspect.isawaitable(answer):
        answer = loop.run_until_complete(asyncio.wait_for(answer, ACTION_TIMEOUT_S))
    if not isinstance(answer, str):
        raise TypeError(f"get_action returned {type(answer).__name__}, not str")
    return answer
