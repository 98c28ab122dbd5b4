"""PromQL semantics of the evaluator, on hand-computable series."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_marathon.alerting.promql import PromQLEngine, PromQLError
from pytest_marathon.tsdb import STALE_NAN, SeriesStore


def _store(series: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]]) -> SeriesStore:
    store = SeriesStore()
    for key, samples in series.items():
        labels = dict(key)
        name = labels.pop("__name__")
        for t, v in samples:
            store.append(name, labels, t, v)
    return store


def _values(result: list[dict]) -> dict[tuple, float]:
    return {tuple(sorted(r["labels"].items())): r["value"] for r in result}


@settings(max_examples=40, deadline=None)
@given(
    slope=st.floats(min_value=0.01, max_value=1000, allow_nan=False),
    start=st.floats(min_value=0, max_value=1e6),
    n=st.integers(min_value=12, max_value=60),
)
def test_rate_of_a_linear_counter_equals_its_slope(slope: float, start: float, n: int) -> None:
    # Samples fill the whole 2m window (first and last within one step of its edges), so
    # Prometheus' extrapolation reconstructs the exact slope.
    store = _store({(("__name__", "c"),): [(15.0 * i, start + slope * 15.0 * i) for i in range(n)]})
    t = 15.0 * (n - 1)
    [sample] = PromQLEngine(store).instant("rate(c[2m])", t)
    assert sample["value"] == pytest.approx(slope, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from("abc"), st.sampled_from("xyz"), st.floats(-1e6, 1e6)),
        min_size=1,
        max_size=20,
        unique_by=lambda r: (r[0], r[1]),
    )
)
def test_sum_by_equals_manual_grouping(rows: list[tuple[str, str, float]]) -> None:
    store = _store(
        {(("__name__", "m"), ("svc", s), ("pod", p)): [(0.0, v)] for s, p, v in rows}
    )
    engine = PromQLEngine(store)
    expected: dict[str, float] = {}
    for s, _, v in rows:
        expected[s] = expected.get(s, 0.0) + v
    got = {r["labels"]["svc"]: r["value"] for r in engine.instant("sum by (svc) (m)", 10.0)}
    assert got.keys() == expected.keys()
    for svc, total in expected.items():
        assert got[svc] == pytest.approx(total, abs=1e-6)
    without = _values(engine.instant("sum without (pod) (m)", 10.0))
    assert without == {(("svc", s),): got[s] for s in got}


def test_counter_reset_is_compensated_in_increase() -> None:
    samples = [(0.0, 10.0), (15.0, 20.0), (30.0, 5.0), (45.0, 15.0), (60.0, 25.0)]
    store = _store({(("__name__", "c"),): samples})
    # The window (0s, 60s] is open on the left: samples 20, 5, 15, 25. Raw increase 25 - 20,
    # plus 20 carried over the reset = 25 over 45s sampled; the first sample is one step from
    # the window start, so it extrapolates to the full 60s: 25 * 60 / 45.
    [sample] = PromQLEngine(store).instant("increase(c[1m])", 60.0)
    assert sample["value"] == pytest.approx(25.0 * 60.0 / 45.0)


def test_staleness_lookback_and_offset() -> None:
    store = _store(
        {
            (("__name__", "g"), ("k", "old")): [(0.0, 1.0)],
            (("__name__", "g"), ("k", "gone")): [(0.0, 2.0), (30.0, STALE_NAN)],
            (("__name__", "g"), ("k", "live")): [(0.0, 3.0), (300.0, 4.0)],
        }
    )
    engine = PromQLEngine(store)
    assert _values(engine.instant("g", 60.0)) == {
        (("__name__", "g"), ("k", "live")): 3.0,
        (("__name__", "g"), ("k", "old")): 1.0,
    }
    assert _values(engine.instant("g", 300.0)) == {(("__name__", "g"), ("k", "live")): 4.0}
    assert _values(engine.instant("g offset 5m", 300.0))[(("__name__", "g"), ("k", "live"))] == 3.0


def test_matchers_and_vector_matching() -> None:
    store = _store(
        {
            (("__name__", "req"), ("svc", "a"), ("code", "0")): [(0.0, 8.0)],
            (("__name__", "req"), ("svc", "a"), ("code", "14")): [(0.0, 2.0)],
            (("__name__", "req"), ("svc", "b"), ("code", "0")): [(0.0, 5.0)],
            (("__name__", "limit"), ("svc", "a"), ("team", "x")): [(0.0, 4.0)],
        }
    )
    e = PromQLEngine(store)
    assert _values(e.instant('req{code!="0"}', 0.0)) == {
        (("__name__", "req"), ("code", "14"), ("svc", "a")): 2.0
    }
    assert len(e.instant('req{svc=~"a|b", code!~"1.*"}', 0.0)) == 2
    ratio = e.instant("req / on (svc) group_left (team) limit", 0.0)
    assert _values(ratio) == {
        (("code", "0"), ("svc", "a"), ("team", "x")): 2.0,
        (("code", "14"), ("svc", "a"), ("team", "x")): 0.5,
    }
    assert _values(e.instant("sum by (svc) (req) > bool 6", 0.0)) == {
        (("svc", "a"),): 1.0,
        (("svc", "b"),): 0.0,
    }
    assert _values(e.instant("sum by (svc) (req) > 6", 0.0)) == {(("svc", "a"),): 10.0}
    assert [r["labels"]["svc"] for r in e.instant("req unless on (svc) limit", 0.0)] == ["b"]
    assert len(e.instant('req or on (svc) limit', 0.0)) == 3
    assert e.instant("absent(nothing{job=\"x\"})", 0.0) == [{"labels": {"job": "x"}, "value": 1.0}]
    assert e.instant("absent(req)", 0.0) == []
    assert e.instant("scalar(sum(req)) * 2", 0.0) == 30.0
    with pytest.raises(PromQLError, match="many-to-many|multiple matches"):
        e.instant("req + on (svc) req", 0.0)


def test_histogram_quantile_interpolates_within_bucket() -> None:
    buckets = {"0.1": 50.0, "0.5": 90.0, "1": 100.0, "+Inf": 100.0}
    store = _store(
        {(("__name__", "h_bucket"), ("le", le)): [(0.0, v)] for le, v in buckets.items()}
    )
    [p50] = PromQLEngine(store).instant("histogram_quantile(0.5, h_bucket)", 0.0)
    [p70] = PromQLEngine(store).instant("histogram_quantile(0.7, h_bucket)", 0.0)
    assert p50["value"] == pytest.approx(0.1)
    assert p70["value"] == pytest.approx(0.1 + 0.4 * (70 - 50) / 40)


def test_functions_and_range_query() -> None:
    store = _store({(("__name__", "g"), ("svc", "a-1")): [(15.0 * i, float(i)) for i in range(21)]})
    e = PromQLEngine(store)
    assert e.instant("max_over_time(g[1m])", 300.0)[0]["value"] == 20.0
    assert e.instant("min_over_time(g[1m])", 300.0)[0]["value"] == 17.0
    assert e.instant("clamp_max(g, 5)", 300.0)[0]["value"] == 5.0
    assert e.instant("deriv(g[5m])", 300.0)[0]["value"] == pytest.approx(1 / 15)
    replaced = e.instant('label_replace(g, "app", "$1", "svc", "(.*)-\\\\d+")', 300.0)
    assert replaced[0]["labels"]["app"] == "a"
    [series] = e.range("g * 2", 0.0, 60.0, 30.0)
    assert series["values"] == [[0.0, 0.0], [30.0, 4.0], [60.0, 8.0]]
    assert math.isnan(e.instant("scalar(nothing)", 0.0))


def test_an_instant_range_selector_returns_the_raw_points_in_its_window() -> None:
    """What Prometheus' /api/v1/query answers for `g[1m]`: the samples in (t-1m, t]."""
    store = _store({(("__name__", "g"), ("svc", "a")): [(15.0 * i, float(i)) for i in range(21)]})
    [series] = PromQLEngine(store).instant("g[1m]", 300.0)
    assert series["labels"] == {"__name__": "g", "svc": "a"}
    assert series["values"] == [[15.0 * i, float(i)] for i in range(17, 21)]


@pytest.mark.parametrize(
    ("query", "construct"),
    [
        ("rate(g[5m:1m])", "subqueries"),
        ("g @ 100", "@ modifier"),
        ("holt_winters(g[5m], 0.5, 0.5)", "holt_winters"),
        ("sum(g", "parenthesis"),
        ('g{a=~"("}', "regex"),
        ("", "empty query"),
    ],
)
def test_unsupported_or_bad_promql_names_the_construct(query: str, construct: str) -> None:
    with pytest.raises(PromQLError, match=construct):
        PromQLEngine(SeriesStore()).instant(query, 0.0)


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["grow", "grow", "grow", "reset", "stale", "overwrite"]),
                  st.floats(min_value=0, max_value=50, allow_nan=False)),
        min_size=3, max_size=40,
    ),
)
def test_rate_while_the_store_grows_equals_rate_on_the_finished_store(steps: list[tuple[str, float]]) -> None:
    """The alert engine evaluates while samples arrive (it tracks resets and stale markers
    incrementally); a query over the finished store sees later resets and markers too and
    reads windows sample by sample. Both must give the same numbers at every time."""
    growing = SeriesStore()
    live = PromQLEngine(growing)
    queries = ("rate(c[1m])", "increase(c[45s])", "delta(c[1m])", "irate(c[1m])")
    seen: list[tuple[float, str, list]] = []
    value, t = 0.0, 0.0
    for kind, amount in steps:
        if kind == "overwrite":  # a second sample at the same time replaces the newest
            live.instant(queries[0], t - 0.5)  # the live engine has seen the value it replaces
            value += amount
            growing.append("c", {}, t, value)
            continue
        seen.extend((t, q, live.instant(q, t)) for q in queries)
        t += 15.0
        if kind == "stale":
            growing.append("c", {}, t, STALE_NAN)
        else:
            value = amount if kind == "reset" else value + amount
            growing.append("c", {}, t, value)
    seen.extend((t, q, live.instant(q, t)) for q in queries)
    finished = PromQLEngine(growing)
    assert [(at, q, finished.instant(q, at)) for at, q, _ in seen] == seen
