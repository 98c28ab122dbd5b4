"""The old-vs-new table of `--marathon-compare`: each run beside its saved counterpart.

A regression gate that only speaks when a tolerance is broken leaves the user guessing what was
compared at all; this table shows every run's headline metrics before and after, and names the
runs that had nothing to be compared with (a save of another seed, agent or scenario), which the
plugin also turns into a warning, so a compare that compared nothing never passes unseen.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_marathon.results import LEADERBOARD_COLUMNS, MarathonResult
from pytest_marathon.spread import format_table
from pytest_marathon.storage import SavedRuns, run_key

COMPARE_COLUMNS = tuple(c for c in LEADERBOARD_COLUMNS if c[1] in (
    "score", "correlated", "located", "repaired", "risk", "degradation_pct"))


@dataclass(frozen=True)
class Comparison:
    """Runs of this session against one save: text rows and the runs without a counterpart."""

    saved: SavedRuns
    header: list[str]
    rows: list[list[str]]
    unmatched: list[str]

    def text(self) -> str:
        return format_table(self.header, self.rows, left=1)


def compare_cell(old: float | None, new: float | None, fmt: str) -> str:
    """`33.3 → 40.0 (+6.7)`; one side alone when the other run did not reach the metric."""
    if old is None and new is None:
        return "-"
    if old is None or new is None:
        return ("-" if old is None else fmt.format(old)) + " → " + (
            "-" if new is None else fmt.format(new))
    delta = fmt.format(new - old)
    delta = delta if delta.startswith("-") else "+" + delta
    return f"{fmt.format(old)} → {fmt.format(new)} ({delta})"


def run_label(result: MarathonResult) -> str:
    return f"{result.agent} {result.app} {result.scenario} seed {result.seed}"


def compare(results: Iterable[MarathonResult], saved: SavedRuns) -> Comparison:
    runs = sorted(results, key=lambda r: (r.agent, r.app, r.scenario, r.seed))
    header = ["Run", *(title for title, _, _ in COMPARE_COLUMNS)]
    rows, unmatched = [], []
    for result in runs:
        before: Mapping[str, Any] | None = saved.runs.get(run_key(result))
        if before is None:
            unmatched.append(run_label(result))
            rows.append([run_label(result), "no saved run", *([""] * (len(COMPARE_COLUMNS) - 1))])
            continue
        old_metrics = before.get("metrics") or {}
        rows.append([run_label(result), *(
            compare_cell(old_metrics.get(name), result.metrics.get(name), fmt)
            for _, name, fmt in COMPARE_COLUMNS
        )])
    return Comparison(saved, header, rows, unmatched)


def no_counterpart_message(result: MarathonResult, saved: SavedRuns) -> str | None:
    """The warning for a run that the compared save has no run of, else None."""
    if run_key(result) in saved.runs:
        return None
    return (f"--marathon-compare: {saved.path.name} has no run of {run_label(result)} "
            f"(backend {result.backend}); this run was compared with nothing")


class MarathonCompareWarning(UserWarning):
    """A run of a `--marathon-compare` session that the compared save has no run of; turn it into
    an error with `-W error::pytest_marathon.comparison.MarathonCompareWarning` to gate on it."""
