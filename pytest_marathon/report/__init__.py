"""The self-contained HTML report: leaderboard, spread across seeds, fault outcomes, and per run
its metrics, its timeline and a table of its faults.

Figures are inline SVG and there are no external assets, so the file opens offline and can be
attached to a CI run as a single artifact. Bundle links are relative to the report's folder, so
the report still points at its evidence when the folder is moved or archived with it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from pytest_marathon import RELEASE
from pytest_marathon.bundle import read_bundle
from pytest_marathon.config import RunConfig
from pytest_marathon.report.figures import OUTCOME_COLOURS, outcomes_svg, timeline_svg
from pytest_marathon.results import (
    LEADERBOARD_COLUMNS,
    MarathonResult,
    format_invocations,
    leaderboard,
    leaderboard_cells,
    leaderboard_header,
)
from pytest_marathon.run.baseline import NOOP_AGENT
from pytest_marathon.scoring.baseline_cache import cached_baseline
from pytest_marathon.spread import has_spread, spread_rows

__all__ = ["result_from_bundle", "write_report"]

#: The per-fault table's columns: (title, per_fault key, how to show it).
FAULT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("Fault", "fault_id", "text"),
    ("Catalog entry", "catalog_id", "text"),
    ("Category", "category", "text"),
    ("Injected", "inject_at", "minute"),
    ("Reverted", "revert_at", "minute"),
    ("Outcome", "outcome", "text"),
    ("Corr", "correlated", "flag"),
    ("Loc", "located", "flag"),
    ("Rep", "repaired", "flag"),
    ("Incident", "incident_id", "text"),
    ("TTD", "time_to_detect_s", "seconds"),
    ("TTL", "time_to_locate_s", "seconds"),
    ("TTR", "time_to_repair_s", "seconds"),
)


def write_report(path: Path, results: Iterable[MarathonResult], title: str = "") -> None:
    path = Path(path)
    runs = sorted(results, key=lambda r: (r.agent, r.app, r.scenario, r.seed))
    sections = [_section(result, path.parent) for result in runs]
    board = leaderboard(runs)
    spread_header, spread_body = spread_rows(runs, [(row.agent, row.app) for row in board])
    outcome_rows = [(section["id"], result.outcome_counts()) for section, result in
                    zip(sections, runs)]
    template = environment().get_template("report.html.j2")
    html = template.render(
        title=title or "pytest-marathon report",
        release=RELEASE,
        columns=leaderboard_header(),
        leaderboard=[leaderboard_cells(row) for row in board],
        spread_header=spread_header if has_spread(runs) else [],
        spread_rows=spread_body if has_spread(runs) else [],
        outcomes_svg=Markup(outcomes_svg(outcome_rows)),
        outcome_colours=OUTCOME_COLOURS,
        fault_columns=[title for title, _, _ in FAULT_COLUMNS],
        runs=sections,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")


def environment() -> jinja2.Environment:
    """The report templates, which share their style sheet (`style.html.j2`)."""
    folder = resources.files(__package__).joinpath("templates")
    return jinja2.Environment(
        autoescape=True, loader=jinja2.FunctionLoader(lambda name: folder.joinpath(name).read_text())
    )


def relative_link(target: Path, start: Path) -> str:
    """A link from the report's folder to a bundle (absolute only across drives)."""
    return _relative(target, start)


def _section(result: MarathonResult, report_dir: Path) -> dict[str, object]:
    bundle = read_bundle(result.bundle, allow_incomplete=True)
    streams = {
        name: bundle.stream(name)
        for name in ("schedule", "alerts", "reports", "interventions", "sli")
    }
    noop_sli = None
    if result.noop_bundle is not None and result.agent != NOOP_AGENT:
        noop_sli = read_bundle(result.noop_bundle, allow_incomplete=True).stream("sli")
    run_id = f"{result.app}-{result.agent}-seed{result.seed}-{result.scenario}"
    horizon = max((r["t"] for r in streams["sli"]), default=60.0)
    per_fault = list(result.score_report.get("per_fault") or [vars(f) for f in result.faults])
    outcomes = {str(f["fault_id"]): str(f["outcome"]) for f in per_fault}
    return {
        "id": run_id,
        "bundle": _relative(result.bundle, report_dir),
        "complete": result.complete,
        "metrics": _metric_cells(result),
        "faults": [_fault_cells(fault) for fault in per_fault],
        "outcomes": [(o, OUTCOME_COLOURS.get(o, "#333333")) for o in
                     (str(f["outcome"]) for f in per_fault)],
        "timeline_svg": Markup(
            timeline_svg(run_id, streams, noop_sli, horizon, outcomes)
        ),
    }


def _metric_cells(result: MarathonResult) -> list[tuple[str, str]]:
    """The run's own leaderboard numbers and its invocation outcomes, as (title, text)."""
    cells = []
    for title, name, fmt in LEADERBOARD_COLUMNS:
        value = result.metrics.get(name)
        cells.append((title, "-" if value is None else fmt.format(value)))
    cells.append(("Inv ok", format_invocations(result.invocations_ok, result.invocations_total)))
    return cells


def _fault_cells(fault: Mapping[str, Any]) -> list[str]:
    cells = []
    for _, key, kind in FAULT_COLUMNS:
        value = fault.get(key)
        if value is None:
            cells.append("-")
        elif kind == "flag":
            cells.append("yes" if value else "no")
        elif kind == "minute":
            cells.append(f"{float(value) / 60:.1f} min")
        elif kind == "seconds":
            cells.append(f"{float(value):.0f} s")
        else:
            cells.append(str(value))
    return cells


def _relative(target: Path, start: Path) -> str:
    """A link from the report's folder to the bundle (absolute only across drives)."""
    try:
        return Path(os.path.relpath(Path(target).resolve(), Path(start).resolve())).as_posix()
    except ValueError:
        return Path(target).resolve().as_posix()


def result_from_bundle(path: Path, baseline_cache: Path | None = None) -> MarathonResult:
    """Score a bundle on disk (against its cached noop baseline when there is one: the cache
    entry of the identity its manifest records, not of today's default configuration)."""
    from pytest_marathon.scoring import score_bundle

    bundle = read_bundle(path, allow_incomplete=True)
    manifest = bundle.manifest
    config = RunConfig(
        app=manifest["app"],
        agent=manifest["agent"],
        seed=int(manifest["seed"]),
        scenario=manifest["scenario"],
        backend=manifest.get("backend") or "twin",
    )
    noop = None if baseline_cache is None else cached_baseline(manifest, baseline_cache)
    score = score_bundle(path, noop=noop, allow_incomplete=True)
    return MarathonResult.from_score(config, path, score, noop_bundle=noop, complete=bundle.complete)
