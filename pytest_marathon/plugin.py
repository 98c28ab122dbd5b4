"""pytest hooks of pytest-marathon: options, one test item per run, fixtures, results.

A marathon is a test: `-k`, `-m marathon`, `--lf` and `-n` work on it as on any test, its metrics
are junit properties, thresholds and regressions fail it with the metric, value and bound. Under
xdist each worker runs its share of the grid and ships the scored result to the controller inside
the test report, where the leaderboard, JSON results, report and saves are produced once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.fixtures import marathon, marathon_backend, marathon_orchestrator
from pytest_marathon.plugin_options import SETTINGS, MarathonSettings, add_options, read_settings
from pytest_marathon.results import MarathonResult, invocation_failure

__all__ = ["marathon", "marathon_backend", "marathon_orchestrator"]

ITEM_RESULT = pytest.StashKey[MarathonResult]()
COMPARED = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "marathon: an SRE marathon run contributed by pytest-marathon")
    settings = read_settings(config)
    config.stash[SETTINGS] = settings
    if settings.compare is not None and settings.active:
        from pytest_marathon.storage import StorageError, load_saved

        try:
            config.stash[COMPARED] = load_saved(settings.storage_dir, settings.compare)
        except StorageError as exc:
            raise pytest.UsageError(f"--marathon-compare: {exc}") from None
    if settings.active:
        config.pluginmanager.register(MarathonSession(config, settings), "marathon-session")


def _junit_xml(config: pytest.Config) -> Any:
    """The junit writer, to add suite properties as `record_testsuite_property` does (that
    fixture is session-scoped user API; hooks have no request to get it from)."""
    from _pytest.junitxml import xml_key

    return config.stash.get(xml_key, None)


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
        from pytest_marathon.config import RunConfig
        from pytest_marathon.runner import run_marathon

        settings = self.config.stash[SETTINGS]
        run_config = RunConfig(
            out_dir=settings.bundle_dir,
            backend=settings.backend,
            delta_s=settings.delta_s,
            budget_s=settings.budget_s,
            max_cost_usd=settings.max_cost_usd,
            price_table=settings.price_table,
            seed_salt=settings.seed_salt,
            **self.run,
        )
        result = run_marathon(
            run_config,
            progress=_progress_for(self.config),
            baseline_cache=settings.cache_dir,
            sign_key=settings.sign_key,
        )
        self.stash[ITEM_RESULT] = result
        self.user_properties.append(("bundle", str(result.bundle)))
        for name in sorted(result.metrics):
            value = result.metrics[name]
            self.user_properties.append((name, "" if value is None else value))
        self.user_properties.append(("invocations_ok", result.invocations_ok))
        self.user_properties.append(("invocations_failed", result.invocations_failed))
        problems = _threshold_failures(settings, result)
        invocations = invocation_failure(
            result, settings.max_failed_invocations, "--marathon-max-failed-invocations"
        )
        if invocations is not None:
            problems.insert(0, invocations)
        compared = self.config.stash.get(COMPARED, None)
        if compared is not None and settings.compare_fail:
            from pytest_marathon.storage import regressions

            problems.extend(regressions(result, compared, settings.compare_fail))
        if problems:
            raise MarathonGateFailure("\n".join(problems))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """A gate failure is its message alone (so the short summary names metric, value and
        bound); any other error is shown from `runtest` down, without pytest's own frames."""
        if isinstance(excinfo.value, MarathonGateFailure):
            return str(excinfo.value)
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
                        name = f"marathon[{RunConfig(**run).run_id}]"
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
    collector = MarathonCollector.from_parent(session, name="marathon", nodeid="marathon")
    items.extend(session.genitems(collector))


# results -------------------------------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    """Attach the scored result to the call report: it travels from xdist workers as JSON."""
    report = yield
    if call.when == "call" and ITEM_RESULT in item.stash:
        report.marathon = item.stash[ITEM_RESULT].to_json()
    return report


class MarathonSession:
    """Collects results from reports (local or from xdist workers) and writes the outputs once,
    in the controlling process."""

    def __init__(self, config: pytest.Config, settings: MarathonSettings) -> None:
        self.config = config
        self.settings = settings
        self.results: list[MarathonResult] = []
        self.notes: list[str] = []

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        xml = _junit_xml(self.config)
        if xml is not None:
            for name, value in self.settings.suite_properties():
                xml.add_global_property(name, value)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "marathon", None)
        if report.when == "call" and data:
            self.results.append(MarathonResult.from_json(data))

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
        if settings.save is not None:
            from pytest_marathon.storage import save_runs

            saved = save_runs(settings.storage_dir, settings.save, results)
            self.notes.append(f"marathon runs saved to {saved}")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.results:
            return
        from pytest_marathon.results import format_leaderboard, leaderboard

        terminalreporter.write_sep("=", "marathon leaderboard (mean over seeds)")
        terminalreporter.write_line(format_leaderboard(leaderboard(self.results)))
        compared = self.config.stash.get(COMPARED, None)
        if compared is not None:
            terminalreporter.write_line(f"compared with {compared.path}")
        for note in self.notes:
            terminalreporter.write_line(note)


# progress ------------------------------------------------------------------------------------


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
