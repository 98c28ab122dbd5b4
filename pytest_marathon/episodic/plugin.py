"""pytest integration of the episodic mode: one test item per problem and agent.

`pytest --marathon-mode=episodic --marathon-app=astronomy --agent=oracle` collects AIOpsLab's
problems of the app (`-k` and `--marathon-problem=<id>` select among them; with
`--marathon-catalog-problems` every catalog fault joins as a problem of each task); an item passes
when the agent's submission is right, so a false positive on a no-operation problem fails.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.episodic.problems import Problem, find_problem, problem_pool

EPISODE_RESULT = pytest.StashKey[dict[str, Any]]()
ITEM_PREFIX = "episode"


def add_episodic_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("marathon")
    group.addoption("--marathon-mode", dest="marathon_mode", default=None, choices=("marathon", "episodic"),
                    help="marathon (default): continuous faults scored from the run's evidence; episodic: "
                    "AIOpsLab's single problems (detection, localization, analysis, mitigation)")
    group.addoption("--marathon-problem", dest="marathon_problem", action="append", default=None, metavar="ID",
                    help="episodic mode: run only this problem id (repeatable)")
    group.addoption("--marathon-catalog-problems", dest="marathon_catalog_problems", action="store_true",
                    default=False, help="episodic mode: every catalog fault of the app as a problem of each task")
    group.addoption("--marathon-max-steps", dest="marathon_max_steps", default=None, type=int, metavar="N",
                    help="episodic mode: the step limit of an episode (default 20)")
    group.addoption("--marathon-min-accuracy", dest="marathon_min_accuracy", action="append", default=None,
                    metavar="[TASK:]PCT",
                    help="episodic mode: fail the session when a task's accuracy across the pool is below PCT "
                    "(every task, or TASK:PCT for one; repeatable); a wrong answer is then an expected "
                    "failure of its item, not a failed test")


def parse_gates(values: list[str]) -> dict[str, float]:
    """`60` or `detection:60` -> {task: minimum percent}; every task for a bare number."""
    from pytest_marathon.episodic.problems import TASKS

    gates: dict[str, float] = {}
    for value in values:
        task, sep, number = value.rpartition(":")
        tasks = (task,) if sep else TASKS
        if sep and task not in TASKS:
            raise pytest.UsageError(f"--marathon-min-accuracy: unknown task {task!r}; choose {', '.join(TASKS)}")
        try:
            percent = float(number.rstrip("%"))
        except ValueError:
            raise pytest.UsageError(f"--marathon-min-accuracy: {value!r} is not [TASK:]PERCENT") from None
        if not 0.0 <= percent <= 100.0:
            raise pytest.UsageError(f"--marathon-min-accuracy: {percent:g} is not a percentage (0-100)")
        for one in tasks:
            gates[one] = percent
    return gates


def is_episodic(config: pytest.Config) -> bool:
    return config.getoption("marathon_mode", None) == "episodic"


def configure_episodic(config: pytest.Config) -> None:
    from pytest_marathon.config import available_apps
    from pytest_marathon.episodic.agents import BUILT_IN
    from pytest_marathon.episodic.session import MCP_PRESETS

    apps = tuple(dict.fromkeys(config.getoption("marathon_app") or ()))
    agents = tuple(dict.fromkeys(config.getoption("marathon_agent") or ()))
    for app in apps:
        if app not in available_apps():
            raise pytest.UsageError(f"--marathon-app: unknown app {app!r}; choose one of: {', '.join(available_apps())}")
    for agent in agents:
        if agent not in BUILT_IN and agent not in MCP_PRESETS and ":" not in agent:
            raise pytest.UsageError(f"--agent: unknown episodic agent {agent!r}; choose {', '.join(BUILT_IN)}, "
                                    f"{', '.join(MCP_PRESETS)} (over MCP), cmd:\"<command>\" or module:Class "
                                    "(a class with `async def get_action(self, state) -> str`)")
    if not apps:
        apps = tuple(a for a in available_apps() if problem_pool((a,)))
    wanted = tuple(config.getoption("marathon_problem") or ())
    try:
        problems = [find_problem(pid, apps) for pid in wanted] if wanted else \
            problem_pool(apps, catalog=bool(config.getoption("marathon_catalog_problems")))
    except ValueError as exc:
        raise pytest.UsageError(f"--marathon-problem: {exc}") from None
    steps = config.getoption("marathon_max_steps", None)
    if steps is not None and steps < 1:
        raise pytest.UsageError(f"--marathon-max-steps must be at least 1, got {steps}")
    gates = parse_gates(config.getoption("marathon_min_accuracy") or [])
    config.pluginmanager.register(EpisodicSession(config, problems, agents or ("oracle",), steps, gates),
                                  "marathon-episodic")


class EpisodeItem(pytest.Item):
    def __init__(self, *, problem: Problem, agent: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem = problem
        self.agent = agent
        self.add_marker("marathon")
        self.add_marker(problem.task)
        if problem.unsupported:
            self.add_marker(pytest.mark.skip(reason=problem.unsupported))

    def runtest(self) -> None:
        from pytest_marathon.episodic.session import DEFAULT_MAX_STEPS, agent_folder, run_problem

        session: EpisodicSession = self.config.pluginmanager.get_plugin("marathon-episodic")
        out = Path(self.config.rootpath) / ".marathon" / "episodes" / agent_folder(self.agent)
        result = run_problem(self.problem, self.agent, seed=1, max_steps=session.max_steps or DEFAULT_MAX_STEPS,
                             out_dir=out, agent_name=self.agent)
        doc = result.to_json()
        doc.pop("trajectory")
        self.stash[EPISODE_RESULT] = doc
        for key in ("correct", "steps", "ttx_s", "submitted"):
            self.user_properties.append((f"episode_{key}", doc[key]))
        if not result.correct:
            shown = json.dumps(result.solution) if result.submitted else "nothing (no submission)"
            message = (f"{self.problem.pid} ({self.problem.task}): {self.agent} submitted {shown}; "
                       f"{json.dumps(result.details, sort_keys=True)}")
            if session.gates:  # the accuracy gate judges the pool; a wrong answer is expected
                pytest.xfail(message)
            raise EpisodeFailed(message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, EpisodeFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return Path(self.config.rootpath), 0, self.name


class EpisodeCollector(pytest.Collector):
    def collect(self) -> list[pytest.Item]:
        session: EpisodicSession = self.config.pluginmanager.get_plugin("marathon-episodic")
        items: list[pytest.Item] = []
        for agent in session.agents:
            for problem in session.problems:
                name = f"{ITEM_PREFIX}[{agent}-{problem.pid}]"
                items.append(EpisodeItem.from_parent(self, name=name, nodeid=name, problem=problem, agent=agent))
        return items


class EpisodeFailed(Exception):
    """The agent's submission was wrong (or missing)."""


class EpisodicSession:
    def __init__(self, config: pytest.Config, problems: list[Problem], agents: tuple[str, ...],
                 max_steps: int | None, gates: dict[str, float]) -> None:
        self.config = config
        self.gates = gates
        self.failed_gates: list[str] = []
        self.problems = problems
        self.agents = agents
        self.max_steps = max_steps
        self.results: list[dict[str, Any]] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        """The problems after the user's own tests, collected through a collector so pytest counts
        and reports them like collected tests (before -k/-m filter the list)."""
        collector = EpisodeCollector.from_parent(session, name=ITEM_PREFIX, nodeid=ITEM_PREFIX)
        items.extend(session.genitems(collector))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        if call.when == "call" and EPISODE_RESULT in item.stash:
            report.marathon_episode = item.stash[EPISODE_RESULT]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        episode = getattr(report, "marathon_episode", None)
        if report.when == "call" and episode is not None:
            self.results.append(episode)

    def accuracy(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(agent, task) -> (right, problems) over the session's episodes."""
        out: dict[tuple[str, str], tuple[int, int]] = {}
        for doc in self.results:
            right, total = out.get((doc["agent"], doc["task"]), (0, 0))
            out[(doc["agent"], doc["task"])] = (right + bool(doc["correct"]), total + 1)
        return out

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workerinput"):  # an xdist worker sees its share only
            return
        for (agent, task), (right, total) in sorted(self.accuracy().items()):
            floor = self.gates.get(task)
            if floor is not None and 100.0 * right / total < floor:
                self.failed_gates.append(f"{agent} {task}: accuracy {100.0 * right / total:.1f}% < {floor:g}%")
        if self.failed_gates and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        self._write_json()
        self._write_report()

    def _write_report(self) -> None:
        """`--marathon-report`: the episodic page (accuracy per task, a row per problem)."""
        from pytest_marathon.episodic.report import write_episodic_report
        from pytest_marathon.plugin_options import SETTINGS

        path = self.config.stash[SETTINGS].report_path
        if path is not None:
            write_episodic_report(path, self.results)

    def _write_json(self) -> None:
        """`--marathon-json`: every episode's score document and the accuracy per agent and task."""
        from pytest_marathon.plugin_options import SETTINGS

        path = self.config.stash[SETTINGS].json_path
        if path is None:
            return
        accuracy: dict[str, dict[str, dict[str, float]]] = {}
        for (agent, task), (right, total) in sorted(self.accuracy().items()):
            accuracy.setdefault(agent, {})[task] = {"problems": total, "correct": right,
                                                   "accuracy": round(100.0 * right / total, 3)}
        episodes = sorted(self.results, key=lambda d: (d["agent"], d["pid"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"mode": "episodic", "accuracy": accuracy, "episodes": episodes},
                                   indent=1, sort_keys=True, default=str) + "\n")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.failed_gates:
            terminalreporter.write_line(f"marathon accuracy gate failed: {line}", red=True)
        if not self.results:
            return
        by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for doc in self.results:
            by[(doc["agent"], doc["task"])].append(doc)
        terminalreporter.section("episodic problems: accuracy per task")
        terminalreporter.write_line(f"{'agent':28} {'task':13} {'problems':>8} {'correct':>8} {'accuracy':>9} "
                                    f"{'mean steps':>10} {'mean TTx s':>10}")
        for (agent, task), docs in sorted(by.items()):
            right = sum(1 for d in docs if d["correct"])
            ttx = [d["ttx_s"] for d in docs if d["ttx_s"] is not None]
            terminalreporter.write_line(
                f"{agent:28} {task:13} {len(docs):8d} {right:8d} {100.0 * right / len(docs):8.1f}% "
                f"{sum(d['steps'] for d in docs) / len(docs):10.1f} "
                f"{(sum(ttx) / len(ttx)) if ttx else float('nan'):10.1f}")
