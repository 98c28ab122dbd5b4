"""One episode: a problem's fault under the app's load, an agent acting through the ACI step by
step, and the task's evaluator (AIOpsLab's Orchestrator.init_problem / start_problem, rewritten
for the twin's virtual time).

Time: the fault goes in at t = 0 after the twin's warm-up, the session starts at START_S (the
symptoms have had two scrape windows to show), every step costs STEP_S virtual seconds, and TTx is
the virtual time from the session's start to the submission. A mitigation is judged SETTLE_S after
the submission, so a repair that has not taken hold yet is not counted.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_marathon.backends import create_backend
from pytest_marathon.episodic.aci import Interface, ParseError, parse_reply
from pytest_marathon.episodic.evaluate import evaluate
from pytest_marathon.episodic.problems import Problem

START_S = 120.0
STEP_S = 10.0
SETTLE_S = 60.0
DEFAULT_MAX_STEPS = 20  # AIOpsLab's largest step limit in its evaluation (§3.5, Figure 5)
ACTION_TIMEOUT_S = 120.0
FIRST_STATE = "Please take the next action"


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


class _Injector:
    """Puts the problem's fault in place at t = 0 and keeps a catalog fault's orchestrator going."""

    def __init__(self, backend: Any, problem: Problem, seed: int) -> None:
        self.backend = backend
        self.problem = problem
        self.orchestrator: Any = None
        fault = problem.fault
        if fault is not None and fault.kind == "catalog":
            from pytest_marathon.faults import load_catalog
            from pytest_marathon.faults.orchestrator import Orchestrator
            from pytest_marathon.faults.scenario import Scenario
            from pytest_marathon.faults.schedule import Schedule, ScheduledFault

            entry = load_catalog(problem.app).get(fault.name)
            self.entry = entry
            never = 1e9
            scenario = Scenario("episode", "", 0.0, never, 0.0, 1, 1.0, 1.0, 1.0, 1.0, 1)
            self.orchestrator = Orchestrator(backend, Schedule(problem.app, scenario, seed,
                                                               (ScheduledFault("f01", entry, 0.0, never),)))

    def advance_to(self, t: float) -> None:
        backend, fault = self.backend, self.problem.fault
        if fault is not None and fault.kind == "flag" and backend.now < 0.0 <= t:
            backend.advance_to(0.0)
            backend.set_feature_flag(fault.name, fault.value)
        while self.orchestrator is not None and backend.now + 5.0 <= t + 1e-9:
            self.orchestrator.step(backend.now)
            backend.advance_to(backend.now + 5.0)
        backend.advance_to(t)

    def finish(self) -> None:
        if self.orchestrator is not None:
            self.orchestrator.finish()


def _load_agent(agent: Any, problem: Problem) -> Any:
    if hasattr(agent, "get_action"):
        return agent
    from pytest_marathon.episodic.agents import make_agent

    return make_agent(str(agent), problem)


def run_problem(problem: Problem, agent: Any, *, seed: int = 1, max_steps: int = DEFAULT_MAX_STEPS,
                out_dir: Path | None = None, agent_name: str | None = None) -> EpisodeResult:
    """Run one episode and evaluate it; with `out_dir`, write `<pid>.json` and its trajectory."""
    started = time.perf_counter()
    backend = create_backend(problem.app, seed)
    lock = threading.RLock()
    injector = _Injector(backend, problem, seed)
    injector.advance_to(START_S)

    def locked(body: Any) -> Any:
        with lock:
            return body()

    from pytest_marathon.apiserver import start_kube_api
    from pytest_marathon.apiserver.kubeconfig import write_kubeconfig

    player = _load_agent(agent, problem)
    name = agent_name or getattr(player, "name", type(player).__name__)
    trajectory: list[dict[str, Any]] = []
    solution: Any = None
    submitted = False
    submitted_at: float | None = None
    in_chars = out_chars = 0
    with tempfile.TemporaryDirectory(prefix="episode-") as scratch, \
            start_kube_api(backend, lock=lock) as server:
        kubeconfig = write_kubeconfig(Path(scratch) / "kubeconfig.yaml", server.url, backend.namespace)
        aci = Interface(backend, backend.namespace, kubeconfig, Path(scratch) / "cache", run_locked=locked)
        apis = dict(line.split(" -> ", 1) if " -> " in line else (line, "") for line in
                    aci.documentation(problem.task).splitlines())
        description = task_description(problem, backend.namespace, locked(backend.workloads))
        if hasattr(player, "init_context"):
            player.init_context(description, instructions(), apis)
        state = FIRST_STATE
        loop = asyncio.new_event_loop()
        try:
            for step in range(1, max_steps + 1):
                in_chars += len(state)
                try:
                    reply = _ask(loop, player, state)
                except Exception as exc:  # noqa: BLE001 - a crashing agent ends its episode, recorded
                    trajectory.append({"step": step, "t": backend.now, "error": f"{type(exc).__name__}: {exc}"})
                    break
                out_chars += len(reply)
                try:
                    call = parse_reply(reply)
                except ParseError as exc:
                    observation = str(exc)
                else:
                    if call.api == "submit":
                        solution = call.args[0] if len(call.args) == 1 else list(call.args) or None
                        submitted, submitted_at = True, backend.now
                        trajectory.append({"step": step, "t": backend.now, "action": reply, "observation": "submitted"})
                        break
                    observation = aci.perform(call)
                trajectory.append({"step": step, "t": backend.now, "action": reply, "observation": observation[:2000]})
                with lock:
                    injector.advance_to(backend.now + STEP_S)
                state = f"{observation}\nPlease take the next action"
        finally:
            loop.close()
        steps = len(trajectory)
        if problem.task == "mitigation":
            with lock:
                injector.advance_to(backend.now + SETTLE_S)
        with lock:
            correct, details = evaluate(problem, solution if submitted else None, backend,
                                        getattr(injector, "entry", None))
        injector.finish()
    result = EpisodeResult(
        pid=problem.pid, app=problem.app, task=problem.task, agent=name, seed=seed,
        correct=bool(correct and submitted), details=details, solution=solution, submitted=submitted,
        steps=steps, ttx_s=(submitted_at - START_S) if submitted_at is not None else None,
        wall_s=round(time.perf_counter() - started, 3), in_chars=in_chars, out_chars=out_chars,
        trajectory=trajectory,
    )
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{problem.pid}.json").write_text(json.dumps(result.to_json(), indent=1, sort_keys=True, default=str))
    return result


def _ask(loop: asyncio.AbstractEventLoop, player: Any, state: str) -> str:
    answer = player.get_action(state)
    if inspect.isawaitable(answer):
        answer = loop.run_until_complete(asyncio.wait_for(answer, ACTION_TIMEOUT_S))
    if not isinstance(answer, str):
        raise TypeError(f"get_action returned {type(answer).__name__}, not str")
    return answer
