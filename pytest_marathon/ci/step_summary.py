"""The Markdown summary GitHub Actions shows on a job's page (`$GITHUB_STEP_SUMMARY`).

GitHub renders whatever a step appends to the file that variable names; the plugin appends the
leaderboard (and, when there is one, the spread across seeds and the old-vs-new comparison), so a
run's numbers are read on the job page instead of in its log. Appended, never overwritten: other
steps of the job write to the same file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from pytest_marathon.comparison import Comparison
from pytest_marathon.results import (
    MarathonResult,
    leaderboard,
    leaderboard_cells,
    leaderboard_header,
)

ENV = "GITHUB_STEP_SUMMARY"


def markdown_table(header: list[str], rows: Iterable[list[str]]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    align = ["---" if i < 2 else "---:" for i in range(len(header))]
    return "\n".join([line(header), "| " + " | ".join(align) + " |", *map(line, rows)])


def markdown_summary(
    results: Iterable[MarathonResult],
    *,
    comparison: Comparison | None = None,
    failed: int = 0,
) -> str:
    """The leaderboard and what goes with it as Markdown (one section, headed)."""
    from pytest_marathon.spread import has_spread, spread_rows

    runs = list(results)
    rows = leaderboard(runs)
    parts = [
        "## pytest-marathon",
        "",
        f"{len(runs)} run(s), {failed} failed; leaderboard (mean over seeds):",
        "",
        markdown_table(leaderboard_header(), [leaderboard_cells(row) for row in rows]),
    ]
    if has_spread(runs):
        header, spread = spread_rows(runs, [(row.agent, row.app) for row in rows])
        parts += ["", "Spread across seeds (mean ± stdev (min–max)):", "",
                  markdown_table(header, spread)]
    if comparison is not None:
        parts += ["", f"Compared with `{comparison.saved.describe()}`:", "",
                  markdown_table(comparison.header, comparison.rows)]
    return "\n".join(parts) + "\n\n"


def append_step_summary(text: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """Append `text` to the file `$GITHUB_STEP_SUMMARY` names; its path, or None when unset."""
    target = (environ if environ is not None else os.environ).get(ENV)
    if not target:
        return None
    path = Path(target)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)
    return path
