"""pytest hooks of pytest-marathon: options, one test item per run, fixtures, results.

A marathon is a test: `-k`, `-m marathon`, `--lf` and `-n` work on it as on any test, the id it
prints re-runs it (`selection`), its metrics reach the junit file where the schema allows them
(`ci.junit`), thresholds and regressions fail it with the metric, value and bound. Under xdist
each worker runs its share of the grid and ships the scored result to the controller inside the
test report, where the leaderboard, JSON results, report, OpenMetrics file, step summary and
saves are produced once.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.backends.base import BackendError
from pytest_marathon.cluster_fixtures import add_cluster_options, marathon_cluster
from pytest_marathon.episodic.plugin import add_episodic_options, configure_episodic, is_episodic
from pytest_marathon.episodic.problems import TASKS
from pytest_marathon.fixtures import marathon, marathon_backend, marathon_orchestrator
from pytest_marathon.interrupts import MarathonStopped, SessionStops
from pytest_marathon.plugin_options import SETTINGS, MarathonSettings, add_options, read_settings
from pytest_marathon.results import MarathonResult, invocation_failure
from pytest_marathon.run.stopping import Terminated
from pytest_marathon.selection import GRID_NAME, narrow, take_selection

__all__ = ["marathon", "marathon_backend", "marathon_cluster", "marathon_orchestrator"]

ITEM_RESULT = pytest.StashKey[MarathonResult]()
PREVIOUS_BUNDLE = pytest.StashKey[str]()
COMPARED = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)
    add_cluster_options(parser)
    add_episodic_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "marathon: an SRE marathon run contributed by pytest-marathon")
    for task in TASKS:
        config.addinivalue_line("markers", f"{task}: an episodic problem of the {task} task")
    settings = read_settings(config)
    config.stash[SETTINGS] = settings
    if is_episodic(config):
        configure_episodic(config)
        return
    if settings.compare is not None and settings.active:
        from pytest_marathon.storage import StorageError, load_saved

        try:
            config.stash[COMPARED] = load_saved(settings.storage_dir, settings.compare)
        except StorageError as exc:
            raise pytest.UsageError(f"--marathon-compare: {exc}") from None
    if settings.active:
        take_selection(config)
        config.pluginmanager.register(MarathonSession(config, settings), "marathon-session")
        stops = SessionStops(config)
        config.pluginmanager.register(stops, "marathon-stops")
        stops.install()


# collection ----------------------------------------------------------------------------------


class MarathonGateFailure(Exception):
    """A run that finished but broke a threshold or regressed against the compared save."""


class MarathonItem(pytest.Item):
    """One run of the grid: agent x app x seed x scenario."""

    def __init__(self, *, run: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run = run
        self.add_marker("marathon")

    def runtest(self) -> None:
        """Run, or on Ctrl-C/SIGTERM fail with one line naming the signal and the bundle and
        stop the session after this test (`interrupts`)."""
        try:
            self._run()
        except (KeyboardInterrupt, Terminated) as exc:
            stops = self.config.pluginmanager.get_plugin("marathon-stops")
            if stops is None:
                raise
            raise stops.stopped(self, exc) from None

    def _run(self) -> None:
        from pytest_marathon.config import RunConfig
        from pytest_marathon.runner import run_marathon

        settings = self.config.stash[SETTINGS]
        run_config = RunConfig(
            out_dir=settings.bundle_dir,
            backend=settings.backend,
            backend_options=settings.backend_options,
            delta_s=settings.delta_s,
            budget_s=settings.budget_s,
            max_cost_usd=settings.max_cost_usd,
            price_table=settings.price_table,
            model=settings.model,
            seed_salt=settings.seed_salt,
            record_model=settings.record_model,
            replay_model=settings.replay_model,
            **self.run,
        )
        if run_config.bundle_dir.exists():  # the runner keeps it as `<run id>.prev`
            self.stash[PREVIOUS_BUNDLE] = str(run_config.bundle_dir)
        from pytest_marathon.metering.recording import RecordingError

        try:
            result = run_marathon(
                run_config,
                progress=_progress_for(self.config),
                baseline_cache=settings.cache_dir,
                sign_key=settings.sign_key,
                isolation_required=settings.require_isolation,
                serve_api=_serve_api_for(self.config) if settings.serve_api else None,
            )
        except RecordingError as exc:  # raised before the run started: nothing was written
            raise MarathonGateFailure(f"--marathon-replay-model: {exc}") from None
        self.stash[ITEM_RESULT] = result
        from pytest_marathon.ci.junit import legacy_family, metric_pairs

        if legacy_family(self.config):  # only xunit1's schema has testcase properties
            self.user_properties.extend(metric_pairs(result))
        problems = _threshold_failures(settings, result)
        invocations = invocation_failure(
            result, settings.max_failed_invocations, "--marathon-max-failed-invocations"
        )
        if invocations is not None:
            problems.insert(0, invocations)
        if result.replay_mismatch is not None:
            problems.insert(0, result.replay_mismatch)
        compared = self.config.stash.get(COMPARED, None)
        if compared is not None:
            from pytest_marathon.comparison import MarathonCompareWarning, no_counterpart_message
            from pytest_marathon.storage import regressions

            unmatched = no_counterpart_message(result, compared)
            if unmatched is not None:
                warnings.warn(MarathonCompareWarning(unmatched), stacklevel=1)
            problems.extend(regressions(result, compared, settings.compare_fail))
        if problems:
            raise MarathonGateFailure("\n".join(problems))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """A gate failure is its message alone (so the short summary names metric, value and
        bound); any other error is shown from `runtest` down, without pytest's own frames."""
        if isinstance(excinfo.value, (MarathonGateFailure, MarathonStopped)):
            return str(excinfo.value)
        if isinstance(excinfo.value, BackendError):  # the system under test cannot be used: says why
            return f"backend: {excinfo.value}"
        if not self.config.getoption("fulltrace", False):
            excinfo.traceback = excinfo.traceback.cut(path=Path(__file__))
            if style is None and self.config.getoption("tbstyle", "auto") == "auto":
                style = "short"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.name


def _threshold_failures(settings: MarathonSettings, result: MarathonResult) -> list[str]:
    checks = (
        ("score", settings.min_score, "min", "--marathon-min-score"),
        ("risk", settings.max_risk, "max", "--marathon-max-risk"),
        ("degradation_pct", settings.max_degradation, "max", "--marathon-max-degradation"),
    )
    failures = []
    for metric, bound, kind, option in checks:
        if bound is None:
            continue
        value = result.metrics.get(metric)
        if value is None:
            failures.append(f"{metric} is not available; {option}={bound:g} cannot be checked")
        elif (kind == "min" and value < bound) or (kind == "max" and value > bound):
            relation = "below the minimum" if kind == "min" else "above the maximum"
            failures.append(f"{metric} = {value:g} is {relation} {bound:g} ({option})")
    return failures


class MarathonCollector(pytest.Collector):
    """The grid, as a collector so pytest counts and reports its items like collected tests."""

    def collect(self) -> list[pytest.Item]:
        from pytest_marathon.config import RunConfig

        settings = self.config.stash[SETTINGS]
        items = []
        for agent in settings.agents:
            for app in settings.apps:
                for scenario in settings.scenarios:
                    for seed in settings.seeds:
                        run = {"app": app, "agent": agent, "seed": seed, "scenario": scenario}
                        name = f"{GRID_NAME}[{RunConfig(**run).run_id}]"
                        items.append(
                            MarathonItem.from_parent(self, name=name, nodeid=name, run=run)
                        )
        return items


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Append the grid after the user's own tests (before -k/-m/--lf filter the list)."""
    if not config.stash[SETTINGS].active:
        return
    collector = MarathonCollector.from_parent(session, name=GRID_NAME, nodeid=GRID_NAME)
    items.extend(narrow(config, list(session.genitems(collector))))


# results -------------------------------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    """Attach the run (every phase: junit's classname needs it from setup on), the scored result
    and a replaced bundle to the reports: they travel from xdist workers as JSON."""
    report = yield
    if isinstance(item, MarathonItem):
        report.marathon_run = dict(item.run)
        if hasattr(item.config, "workerinput"):  # the controller passes a signal on to it
            report.marathon_pid = os.getpid()
    if call.when == "call" and ITEM_RESULT in item.stash:
        report.marathon = item.stash[ITEM_RESULT].to_json()
        if PREVIOUS_BUNDLE in item.stash:
            report.marathon_previous = item.stash[PREVIOUS_BUNDLE]
    return report


class MarathonSession:
    """Collects results from reports (local or from xdist workers) and writes the outputs once,
    in the controlling process."""

    def __init__(self, config: pytest.Config, settings: MarathonSettings) -> None:
        self.config = config
        self.settings = settings
        self.results: list[MarathonResult] = []
        self.notes: list[str] = []
        self.previous: list[str] = []
        self.failed = 0

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from pytest_marathon.ci.junit import junit_writer

        xml = junit_writer(self.config)
        if xml is not None:
            for name, value in self.settings.suite_properties():
                xml.add_global_property(name, value)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from pytest_marathon.ci import junit

        run = getattr(report, "marathon_run", None)
        if run is not None:
            junit.annotate_testcase(self.config, report, run)
            self.failed += int(report.failed and report.when == "call")
        data = getattr(report, "marathon", None)
        if report.when == "call" and data:
            result = MarathonResult.from_json(data)
            self.results.append(result)
            junit.record_result(self.config, report, result)
            previous = getattr(report, "marathon_previous", None)
            if previous:
                self.previous.append(previous)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workerinput") or not self.results:
            return
        settings = self.settings
        results = sorted(self.results, key=lambda r: (r.agent, r.app, r.scenario, r.seed))
        if settings.json_path is not None:
            from pytest_marathon.results import write_results_json
            from pytest_marathon.storage import machine_info

            info = {"machine_info": machine_info(), **dict(settings.suite_properties())}
            write_results_json(settings.json_path, results, info)
            self.notes.append(f"marathon results written to {settings.json_path}")
        if settings.report_path is not None:
            from pytest_marathon.report import write_report

            write_report(settings.report_path, results)
            self.notes.append(f"marathon report written to {settings.report_path}")
        if settings.openmetrics_path is not None:
            from pytest_marathon.ci.openmetrics import write_openmetrics

            write_openmetrics(settings.openmetrics_path, results)
            self.notes.append(f"marathon OpenMetrics written to {settings.openmetrics_path}")
        if settings.save is not None:
            from pytest_marathon.storage import save_runs

            saved = save_runs(settings.storage_dir, settings.save, results,
                              Path(self.config.invocation_params.dir))
            self.notes.append(f"marathon runs saved to {saved}")
        from pytest_marathon.ci.step_summary import append_step_summary, markdown_summary

        summary = append_step_summary(
            markdown_summary(results, comparison=self._comparison(), failed=self.failed)
        )
        if summary is not None:
            self.notes.append(f"marathon summary appended to {summary} ($GITHUB_STEP_SUMMARY)")

    def _comparison(self) -> Any:
        from pytest_marathon.comparison import compare

        compared = self.config.stash.get(COMPARED, None)
        return None if compared is None else compare(self.results, compared)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.results:
            return
        from pytest_marathon.results import format_leaderboard, leaderboard
        from pytest_marathon.spread import format_table, has_spread, spread_rows

        rows = leaderboard(self.results)
        terminalreporter.write_sep("=", "marathon leaderboard (mean over seeds)")
        terminalreporter.write_line(format_leaderboard(rows))
        if has_spread(self.results):
            header, spread = spread_rows(self.results, [(row.agent, row.app) for row in rows])
            terminalreporter.write_line("")
            terminalreporter.write_line("spread across seeds: mean ± stdev (min–max)")
            terminalreporter.write_line(format_table(header, spread))
        comparison = self._comparison()
        if comparison is not None:
            terminalreporter.write_sep("-", "marathon compare: saved (old) → this session (new)")
            terminalreporter.write_line(f"compared with {comparison.saved.describe()}")
            terminalreporter.write_line(comparison.text())
            if comparison.unmatched:
                terminalreporter.write_line(
                    f"WARNING: {len(comparison.unmatched)} run(s) had no saved counterpart and "
                    f"were compared with nothing: {'; '.join(comparison.unmatched)}",
                    yellow=True, bold=True,
                )
        for previous in self.previous:
            terminalreporter.write_line(
                f"marathon: the earlier bundle of {Path(previous).name} was kept as "
                f"{previous}.prev (one earlier run is kept)"
            )
        for note in self.notes:
            terminalreporter.write_line(note)


# progress ------------------------------------------------------------------------------------


def _serve_api_for(config: pytest.Config) -> Any:
    """Live APIs whose addresses reach the terminal past output capturing (`run.live_api`)."""
    from pytest_marathon.run.live_api import ServeApi

    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capman = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        return ServeApi()

    def announce(line: str) -> None:
        if capman is None:
            reporter.write_line(f"marathon: {line}")
            return
        with capman.global_and_fixture_disabled():
            reporter.write_line(f"marathon: {line}")

    return ServeApi(announce=announce)


def _progress_for(config: pytest.Config) -> Any:
    """A live progress line on an interactive terminal of the controlling process, else none."""
    from pytest_marathon.run.progress import SilentProgress, TerminalProgress

    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capman = config.pluginmanager.get_plugin("capturemanager")
    if hasattr(config, "workerinput") or reporter is None or capman is None:
        return SilentProgress()
    # The reporter judged the terminal when it was created; asking the stream now would ask the
    # file pytest's output capturing put behind it, which is never a terminal.
    if not reporter.isatty():
        return SilentProgress()
    stream = reporter._tw._file  # the real terminal, captured output aside
    return TerminalProgress(stream, tty=True, guard=capman.global_and_fixture_disabled)
