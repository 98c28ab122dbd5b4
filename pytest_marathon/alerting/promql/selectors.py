"""Vector and matrix selectors: which series a query reads, and their samples at a time.

The series a selector matches are found once and extended incrementally as the store grows
(series are only ever added), kept sorted by labels like Prometheus' series sets, so the many
evaluations of a run never rescan the store. An instant selector looks back at most
`LOOKBACK_SECONDS` and skips stale markers, as Prometheus does. The matrix selector also hosts
the `rate`/`increase`/`delta` hot path, which reads the series arrays directly instead of
building windows, and answers a flat window (`Series.quiet_since`) without reading samples.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_marathon.alerting.promql.nodes import _Context, _Node
from pytest_marathon.alerting.promql.values import Labels, PromQLError, Vector
from pytest_marathon.alerting.promql.windows import (
    Window,
    _extrapolate,
    _extrapolated,
    _same,
    _SeriesAux,
)
from pytest_marathon.tsdb import LOOKBACK_SECONDS, Series, is_stale

if TYPE_CHECKING:
    from pytest_marathon.alerting.promql.engine import PromQLEngine


@dataclass(frozen=True)
class _Matcher:
    op: str
    name: str
    value: str
    pattern: re.Pattern[str] | None

    def matches(self, labels: dict[str, str]) -> bool:
        actual = labels.get(self.name, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        assert self.pattern is not None
        hit = self.pattern.fullmatch(actual) is not None
        return hit if self.op == "=~" else not hit


_MATCH_OPS = {"Equal": "=", "NotEqual": "!=", "Re": "=~", "NotRe": "!~"}


def _compile_matcher(m: Any) -> _Matcher:
    op = _MATCH_OPS[str(m.op).split(".")[-1]]
    pattern = None
    if op in ("=~", "!~"):
        try:
            pattern = re.compile(m.value)
        except re.error as exc:
            raise PromQLError(f"invalid regular expression {m.value!r} in matcher: {exc}") from exc
    return _Matcher(op, m.name, m.value, pattern)


class _SelectorIndex:
    """The series a selector matches, extended incrementally as the store grows (series are
    only ever added, in creation order), kept sorted by labels like Prometheus' series sets."""

    __slots__ = ("seen", "matched")

    def __init__(self) -> None:
        self.seen = 0
        self.matched: list[tuple[Labels, Labels, Series, _SeriesAux]] = []


class _VectorSelector(_Node):
    def __init__(self, name: str | None, matchers: list[_Matcher], offset: float, text: str):
        self.name = name
        self.matchers = matchers
        self.offset = offset
        self.key = f"vs:{text}"
        self.select_key = f"{name}|" + "|".join(f"{m.name}{m.op}{m.value}" for m in matchers)

    def series(self, engine: PromQLEngine) -> list[tuple[Labels, Labels, Series, _SeriesAux]]:
        """(labels, labels without __name__, series, aux) of every matching series."""
        return engine._select(self)

    def _evaluate(self, ctx: _Context) -> Vector:
        t = ctx.t - self.offset
        out: Vector = []
        lookback = LOOKBACK_SECONDS
        oldest = t - lookback
        for labels, _, series, _ in self.series(ctx.engine):
            times = series.times
            if not times or times[-1] <= oldest:
                continue  # nothing in the lookback window (a deleted pod's series, say)
            hi = len(times) if times[-1] <= t else bisect_right(times, t)
            if hi == 0 or times[hi - 1] <= oldest:
                continue
            v = series.values[hi - 1]
            if v != v and is_stale(v):
                continue
            out.append((labels, v))
        return out


class _MatrixSelector(_Node):
    kind = "matrix"

    def __init__(self, selector: _VectorSelector, range_s: float, text: str):
        self.selector = selector
        self.range = range_s
        self.key = f"ms:{text}"

    def _evaluate(self, ctx: _Context) -> list[Window]:
        end = ctx.t - self.selector.offset
        start = end - self.range
        out: list[Window] = []
        for _, labels_no_name, series, aux in self.selector.series(ctx.engine):
            times = series.times
            lo = bisect_right(times, start)
            hi = bisect_right(times, end)
            if hi > lo:
                values = series.values
                if aux.n != len(values) or not _same(values[-1], aux.newest):
                    aux.refresh(series)
                out.append((labels_no_name, series, lo, hi, aux))
        return out

    def extrapolate(self, ctx: _Context, counter: bool, per_second: bool) -> Vector:
        """rate/increase/delta straight off the series arrays (the hot path of every rule):
        windows without stale markers or counter resets skip building a window at all."""
        end = ctx.t - self.selector.offset
        start = end - self.range
        out: Vector = []
        append = out.append
        for _, labels, series, aux in self.selector.series(ctx.engine):
            times = series.times
            newest_t = times[-1]
            if newest_t <= start:
                # Nothing inside the window (a deleted pod's series, ended by its stale marker):
                # skip it before any upkeep; its running state is checked again on the next visit.
                continue
            if series.quiet_since <= start and newest_t <= end:
                # A flat window (every sample one finite value, so no reset or stale marker):
                # 0 by any extrapolation, as the clean path below finds; the running state
                # catches up on the next visit that reads samples.
                if len(times) > 1 and times[-2] > start:
                    append((labels, 0.0))
                continue
            values = series.values
            n = len(values)
            newest = values[-1]
            seen = aux.n
            if seen == n - 1 and seen and newest == newest and values[seen - 1] == aux.newest:
                # One new plain sample since the last look (the usual case): count it here.
                if newest < aux.last:
                    aux.last_reset = seen
                aux.last = aux.newest = newest
                aux.n = n
            elif seen != n or not (newest == aux.newest or _same(newest, aux.newest)):
                aux.refresh(series)
            lo = bisect_right(times, start)
            # Rules run at the newest scrape, so the window usually ends past the last sample.
            hi = n if newest_t <= end else bisect_right(times, end, lo)
            if hi - lo < 2:
                continue
            if aux.last_stale < lo and (not counter or aux.last_reset <= lo):
                first_v = values[lo]
                change = values[hi - 1] - first_v
                if change == 0.0:
                    # An idle counter: any extrapolation factor (finite, positive) gives 0.
                    append((labels, 0.0))
                    continue
                append((labels, _extrapolate(
                    times[lo], times[hi - 1], first_v, change, hi - lo, start, end, counter, per_second,
                )))
            else:
                value = _extrapolated((labels, series, lo, hi, aux), start, end, counter, per_second)
                if value is not None:
                    append((labels, value))
        return out
