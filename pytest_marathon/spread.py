"""Spread across seeds: how far one agent x app's runs are from their mean.

A leaderboard mean over three seeds says nothing about whether the agent scores 40 every time or
10 and 70; with several runs per row the plugin also shows, for the headline metrics, the mean
± sample standard deviation and the smallest and largest value.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pytest_marathon.results import LEADERBOARD_COLUMNS, MarathonResult

#: The metrics whose spread is shown (title, metric, format), the leaderboard's first columns.
SPREAD_COLUMNS = tuple(c for c in LEADERBOARD_COLUMNS if c[1] in (
    "score", "correlated", "located", "repaired", "risk", "degradation_pct"))


@dataclass(frozen=True)
class Spread:
    """One metric over a row's runs that reached it (`n` of them)."""

    n: int
    mean: float
    stdev: float
    low: float
    high: float

    def to_json(self) -> dict[str, float]:
        return {"n": self.n, "mean": round(self.mean, 6), "stdev": round(self.stdev, 6),
                "min": self.low, "max": self.high}


def spreads(results: Iterable[MarathonResult]) -> dict[tuple[str, str], dict[str, Spread]]:
    """(agent, app) -> metric -> Spread, for every metric of the results (all rows)."""
    groups: dict[tuple[str, str], list[MarathonResult]] = {}
    for result in results:
        groups.setdefault((result.agent, result.app), []).append(result)
    table: dict[tuple[str, str], dict[str, Spread]] = {}
    for key, runs in groups.items():
        metrics: dict[str, Spread] = {}
        for name in sorted({name for run in runs for name in run.metrics}):
            values = [float(v) for run in runs if (v := run.metrics.get(name)) is not None]
            if values:
                stdev = statistics.stdev(values) if len(values) > 1 else 0.0
                metrics[name] = Spread(len(values), statistics.fmean(values), stdev,
                                       min(values), max(values))
        table[key] = metrics
    return table


def has_spread(results: Iterable[MarathonResult]) -> bool:
    """True when some agent x app has more than one run (else a spread says nothing)."""
    seen: set[tuple[str, str]] = set()
    for result in results:
        key = (result.agent, result.app)
        if key in seen:
            return True
        seen.add(key)
    return False


def spread_cell(spread: Spread | None, fmt: str) -> str:
    """`41.2 ± 3.5 (37.0–45.1)`, a dash when no run reached the metric."""
    if spread is None:
        return "-"
    value = fmt.format
    return f"{value(spread.mean)} ± {value(spread.stdev)} ({value(spread.low)}–{value(spread.high)})"


def spread_rows(
    results: Iterable[MarathonResult], order: Iterable[tuple[str, str]]
) -> tuple[list[str], list[list[str]]]:
    """Header and text rows (agent, app, runs, one cell per spread metric) in `order`."""
    runs = list(results)
    table = spreads(runs)
    counts: dict[tuple[str, str], int] = {}
    for run in runs:
        counts[(run.agent, run.app)] = counts.get((run.agent, run.app), 0) + 1
    header = ["Agent", "App", "Runs", *(title for title, _, _ in SPREAD_COLUMNS)]
    rows = []
    for key in order:
        metrics: Mapping[str, Spread] = table.get(key, {})
        rows.append([key[0], key[1], str(counts.get(key, 0)),
                     *(spread_cell(metrics.get(name), fmt) for _, name, fmt in SPREAD_COLUMNS)])
    return header, rows


def format_table(header: list[str], rows: list[list[str]], left: int = 2) -> str:
    """Fixed-width text, the first `left` columns left-aligned (as the leaderboard)."""
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]

    def render(cells: list[str]) -> str:
        return "  ".join(
            cell.ljust(width) if i < left else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths))
        ).rstrip()

    return "\n".join([render(header), render(["-" * w for w in widths]), *map(render, rows)])
