"""Leaderboard aggregation and the JSON/compare round trips (properties over arbitrary results)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pytest_marathon.results import METRICS, MarathonResult, format_leaderboard, leaderboard
from pytest_marathon.storage import load_saved, parse_compare_rule, regressions, save_runs

metric_value = st.one_of(st.none(), st.floats(0, 100, allow_nan=False))
results = st.lists(
    st.builds(
        lambda agent, app, seed, values: MarathonResult(
            app=app, agent=agent, scenario="short-5", seed=seed, backend="twin",
            bundle=Path(f"/b/{app}-{agent}-{seed}"), metrics=dict(zip(METRICS, values)),
        ),
        st.sampled_from(["noop", "runbook", "keep-style"]),
        st.sampled_from(["boutique", "shop"]),
        st.integers(1, 9),
        st.lists(metric_value, min_size=len(METRICS), max_size=len(METRICS)),
    ),
    max_size=12,
)


@given(results)
def test_one_row_per_agent_app_with_means_inside_the_range(runs: list[MarathonResult]) -> None:
    rows = leaderboard(runs)
    assert len(rows) == len({(r.agent, r.app) for r in runs})
    for row in rows:
        group = [r for r in runs if (r.agent, r.app) == (row.agent, row.app)]
        assert row.runs == len(group)
        for name in METRICS:
            values = [r.metrics[name] for r in group if r.metrics[name] is not None]
            if not values:
                assert row.means[name] is None
            else:
                assert min(values) - 1e-6 <= row.means[name] <= max(values) + 1e-6
    assert leaderboard(list(reversed(runs))) == rows
    table = format_leaderboard(rows)
    assert len(table.splitlines()) == len(rows) + 2


@given(results)
def test_json_round_trip(runs: list[MarathonResult]) -> None:
    for run in runs:
        assert MarathonResult.from_json(run.to_json()) == run


@given(st.floats(0, 100), st.floats(0, 100), st.floats(0, 50), st.booleans())
def test_compare_fail_is_symmetric_in_direction(
    old: float, new: float, tolerance: float, relative: bool
) -> None:
    tolerance = round(tolerance, 3)
    rule = parse_compare_rule(f"score:{tolerance:.3f}{'%' if relative else ''}")
    allowed = old * tolerance / 100 if relative else tolerance
    base = dict.fromkeys(METRICS)
    saved_run = MarathonResult("boutique", "a", "short-5", 1, "twin", Path("/b"),
                               {**base, "score": old})
    current = MarathonResult("boutique", "a", "short-5", 1, "twin", Path("/b"),
                             {**base, "score": new})
    with tempfile.TemporaryDirectory() as root:
        save_runs(Path(root), "base", [saved_run])
        failures = regressions(current, load_saved(Path(root), None), [rule])
    assert bool(failures) == (old - new > allowed + 1e-9)
