"""A PromQL evaluator over the twin's series store.

The same engine answers alert rules and the agents' `query_metrics` tool, so it follows the
Prometheus engine closely (extrapolated `rate`, one-hot vector matching, incremental `avg`,
bucket interpolation of `histogram_quantile`) and refuses what it does not implement with a
`PromQLError` naming the construct, rather than returning a plausible wrong answer.

Queries are parsed once with `promql_parser` and compiled into a small tree of nodes. Each node
has a canonical text key; within one evaluation time every node's result is cached by that key,
so the 44 rules of a pack share their common selectors and `rate(...)` sub-expressions.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import promql_parser as pp

from pytest_marathon.tsdb import LOOKBACK_SECONDS, Series, SeriesStore, is_stale

Labels = tuple[tuple[str, str], ...]
Sample = tuple[Labels, float]
Vector = list[Sample]
# One series' samples in a range window: labels, series, first index, end index (exclusive).
Window = tuple[Labels, Series, int, int, "_SeriesAux"]

NAME = "__name__"


class PromQLError(ValueError):
    """A query this evaluator cannot run: bad syntax, unsupported construct, or a runtime
    error Prometheus would also raise (e.g. many-to-many matching)."""


# ------------------------------------------------------------------------------------------
# label helpers


def drop_name(labels: Labels) -> Labels:
    if labels and any(k == NAME for k, _ in labels):
        return tuple(kv for kv in labels if kv[0] != NAME)
    return labels


def _keep(labels: Labels, names: frozenset[str]) -> Labels:
    return tuple(kv for kv in labels if kv[0] in names)


def _drop(labels: Labels, names: frozenset[str]) -> Labels:
    return tuple(kv for kv in labels if kv[0] not in names)


def _with(labels: Labels, name: str, value: str) -> Labels:
    items = dict(labels)
    if value == "":
        items.pop(name, None)
    else:
        items[name] = value
    return tuple(sorted(items.items()))


def _format_labels(labels: Labels) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in labels) + "}"


# ------------------------------------------------------------------------------------------
# float arithmetic with Go/IEEE semantics (Python raises where Go returns Inf/NaN)


def _div(a: float, b: float) -> float:
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _mod(a: float, b: float) -> float:
    if b == 0.0 or math.isinf(a) or math.isnan(a) or math.isnan(b):
        return math.nan
    return math.fmod(a, b)


def _pow(a: float, b: float) -> float:
    try:
        return math.pow(a, b)
    except OverflowError:
        return math.inf
    except ValueError:
        if a == 0.0 and b < 0:
            return math.inf
        return math.nan


_ARITHMETIC: dict[str, Callable[[float, float], float]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _div,
    "%": _mod,
    "^": _pow,
    "atan2": math.atan2,
}
_COMPARISON: dict[str, Callable[[float, float], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
}
_SET_OPS = ("and", "or", "unless")


# ------------------------------------------------------------------------------------------
# evaluation context and node base


@dataclass
class _Context:
    engine: PromQLEngine
    t: float
    cache: dict[str, Any]


class _Node:
    """A compiled expression. `kind` is the PromQL value type it returns."""

    kind = "vector"
    key = ""

    def evaluate(self, ctx: _Context) -> Any:
        cached = ctx.cache.get(self.key)
        if cached is None:
            cached = self._evaluate(ctx)
            ctx.cache[self.key] = cached
        return cached

    def _evaluate(self, ctx: _Context) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class _Number(_Node):
    kind = "scalar"

    def __init__(self, value: float) -> None:
        self.value = value
        self.key = f"num:{value!r}"

    def evaluate(self, ctx: _Context) -> float:
        return self.value


class _String(_Node):
    kind = "string"

    def __init__(self, value: str) -> None:
        self.value = value
        self.key = f"str:{value!r}"

    def evaluate(self, ctx: _Context) -> str:
        return self.value


# ------------------------------------------------------------------------------------------
# selectors


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


class _SeriesAux:
    """Where a series last held a stale marker and a counter reset, kept in step with the
    series as it grows, so `rate` over a window without either needs no per-sample loop.

    Only the newest positions are kept (not one count per sample): a window starting after
    both is clean, which is the case for nearly every window an alert rule reads; any other
    window is checked sample by sample, so the answer never depends on this shortcut.
    """

    __slots__ = ("n", "last_stale", "last_reset", "newest", "last")

    def __init__(self) -> None:
        self.n = 0
        self.last_stale = -1  # index of the newest stale marker
        self.last_reset = -1  # index of the newest sample below the non-stale sample before it
        self.newest = 0.0
        self.last = math.nan  # newest non-stale value among the first n samples

    def refresh(self, series: Series) -> None:
        values = series.values
        total = len(values)
        n = self.n
        if total == n or (n and not _same(values[n - 1], self.newest)):
            # Series.append overwrote the newest value in place: recount from the start.
            self.__init__()  # type: ignore[misc]
            n = 0
        last = self.last
        for i in range(n, total):
            v = values[i]
            if v != v and is_stale(v):
                self.last_stale = i
            else:
                if v < last:
                    self.last_reset = i
                last = v
        self.n = total
        self.newest = values[-1]
        self.last = last


def _same(a: float, b: float) -> bool:
    return a == b or (a != a and b != b and is_stale(a) == is_stale(b))


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
        for labels, _, series, _ in self.series(ctx.engine):
            times = series.times
            hi = bisect_right(times, t)
            if hi == 0 or times[hi - 1] <= t - lookback:
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
            hi = bisect_right(times, end, lo)
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


# ------------------------------------------------------------------------------------------
# range-vector functions


def _window_points(window: Window) -> tuple[list, list]:
    """Times and values of a window with stale markers removed."""
    _, series, lo, hi, aux = window
    times = series.times[lo:hi]
    values = series.values[lo:hi]
    if aux.last_stale < lo:
        return times, values
    keep = [i for i, v in enumerate(values) if not (v != v and is_stale(v))]
    return [times[i] for i in keep], [values[i] for i in keep]


def _extrapolated(
    window: Window, start: float, end: float, counter: bool, per_second: bool
) -> float | None:
    """Prometheus' `extrapolatedRate` (rate, increase, delta) of a window holding stale
    markers or counter resets; clean windows take the fast path in `_RangeFunction`."""
    ts, vs = _window_points(window)
    if len(ts) < 2:
        return None
    result = vs[-1] - vs[0]
    if counter:
        last = 0.0
        for v in vs:
            if v < last:
                result += last
            last = v
    return _extrapolate(ts[0], ts[-1], vs[0], result, len(ts), start, end, counter, per_second)


def _extrapolate(
    first_t: float, last_t: float, first_v: float, result: float, count: int,
    start: float, end: float, counter: bool, per_second: bool,
) -> float:
    duration_to_start = first_t - start
    duration_to_end = end - last_t
    sampled = last_t - first_t
    average_step = sampled / (count - 1)
    if counter and result > 0 and first_v >= 0:
        duration_to_zero = sampled * (first_v / result)
        if duration_to_zero < duration_to_start:
            duration_to_start = duration_to_zero
    threshold = average_step * 1.1
    extrapolate_to = sampled
    extrapolate_to += duration_to_start if duration_to_start < threshold else average_step / 2
    extrapolate_to += duration_to_end if duration_to_end < threshold else average_step / 2
    # Same operation order as Prometheus (factor first), so results agree to the last bit.
    factor = extrapolate_to / sampled
    if per_second:
        factor /= end - start
    return result * factor


def _instant_delta(window: Window, is_rate: bool) -> float | None:
    """irate / idelta: from the last two samples."""
    ts, vs = _window_points(window)
    if len(ts) < 2:
        return None
    previous, last = vs[-2], vs[-1]
    result = last - previous
    if is_rate and last < previous:
        result = last
    interval = ts[-1] - ts[-2]
    if interval == 0:
        return None
    return result / interval if is_rate else result


def _linear_regression(times: list, values: list, intercept_time: float) -> tuple[float, float]:
    n = float(len(times))
    init = values[0]
    if all(v == init for v in values):
        if math.isinf(init):
            return math.nan, math.nan
        return 0.0, init
    sum_x = sum_y = sum_xy = sum_x2 = 0.0
    for t, v in zip(times, values):
        x = t - intercept_time
        sum_x += x
        sum_y += v
        sum_xy += x * v
        sum_x2 += x * x
    cov_xy = sum_xy - sum_x * sum_y / n
    var_x = sum_x2 - sum_x * sum_x / n
    slope = _div(cov_xy, var_x)
    intercept = sum_y / n - slope * sum_x / n
    return slope, intercept


def _quantile(q: float, values: list[float]) -> float:
    if not values:
        return math.nan
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    ordered = sorted(values)
    n = len(ordered)
    rank = q * (n - 1)
    lower = max(0, int(math.floor(rank)))
    upper = min(n - 1, lower + 1)
    weight = rank - math.floor(rank)
    return ordered[lower] * (1 - weight) + ordered[upper] * weight


def _mean(values: list[float]) -> float:
    mean = 0.0
    for i, v in enumerate(values, start=1):
        if math.isinf(mean) and (
            (math.isinf(v) and (mean > 0) == (v > 0)) or (not math.isinf(v) and not math.isnan(v))
        ):
            continue
        mean += v / i - mean / i
    return mean


def _variance(values: list[float]) -> float:
    mean = m2 = 0.0
    for i, v in enumerate(values, start=1):
        delta = v - mean
        mean += delta / i
        m2 += delta * (v - mean)
    return m2 / len(values)


_OVER_TIME: dict[str, Callable[[list[float]], float]] = {
    "avg_over_time": _mean,
    "min_over_time": lambda vs: min(vs) if not any(math.isnan(v) for v in vs) else _nan_min(vs),
    "max_over_time": lambda vs: max(vs) if not any(math.isnan(v) for v in vs) else _nan_max(vs),
    "sum_over_time": lambda vs: float(sum(vs)),
    "count_over_time": lambda vs: float(len(vs)),
    "last_over_time": lambda vs: vs[-1],
    "present_over_time": lambda vs: 1.0,
    "stddev_over_time": lambda vs: math.sqrt(_variance(vs)),
    "stdvar_over_time": _variance,
}


def _nan_min(values: list[float]) -> float:
    best = values[0]
    for v in values[1:]:
        if v < best or math.isnan(best):
            best = v
    return best


def _nan_max(values: list[float]) -> float:
    best = values[0]
    for v in values[1:]:
        if v > best or math.isnan(best):
            best = v
    return best


class _RangeFunction(_Node):
    """A function of one range vector (plus scalar parameters) returning an instant vector."""

    def __init__(self, name: str, matrix: _MatrixSelector, params: list[_Node], text: str):
        self.name = name
        self.matrix = matrix
        self.params = params
        self.key = f"fn:{text}"

    def _evaluate(self, ctx: _Context) -> Vector:
        name = self.name
        if name in ("rate", "increase", "delta"):
            return self.matrix.extrapolate(ctx, name != "delta", name == "rate")
        windows = self.matrix.evaluate(ctx)
        params = [p.evaluate(ctx) for p in self.params]
        out: Vector = []
        for window in windows:
            labels = window[0]
            value: float | None
            if name in ("irate", "idelta"):
                value = _instant_delta(window, is_rate=name == "irate")
            else:
                ts, vs = _window_points(window)
                if not ts:
                    continue
                value = self._over_points(name, ts, vs, params, ctx.t)
                if name == "last_over_time":
                    labels = self._with_name(window)
            if value is not None:
                out.append((labels, value))
        return out

    def _with_name(self, window: Window) -> Labels:
        return window[1].key

    @staticmethod
    def _over_points(
        name: str, ts: list, vs: list, params: list[Any], t: float
    ) -> float | None:
        if name in _OVER_TIME:
            return _OVER_TIME[name](list(vs))
        if name == "quantile_over_time":
            return _quantile(params[0], list(vs))
        if name == "changes":
            return float(sum(1 for a, b in zip(vs, vs[1:]) if a != b and not (a != a and b != b)))
        if name == "resets":
            return float(sum(1 for a, b in zip(vs, vs[1:]) if b < a))
        if name == "deriv":
            if len(ts) < 2:
                return None
            return _linear_regression(list(ts), list(vs), ts[0])[0]
        if name == "predict_linear":
            if len(ts) < 2:
                return None
            slope, intercept = _linear_regression(list(ts), list(vs), t)
            return slope * params[0] + intercept
        raise PromQLError(f"function {name}() is not supported")  # pragma: no cover


class _AbsentOverTime(_Node):
    def __init__(self, matrix: _MatrixSelector, text: str):
        self.matrix = matrix
        self.key = f"fn:{text}"

    def _evaluate(self, ctx: _Context) -> Vector:
        if self.matrix.evaluate(ctx):
            return []
        return [(_absent_labels(self.matrix.selector), 1.0)]


def _absent_labels(node: _Node) -> Labels:
    if not isinstance(node, _VectorSelector):
        return ()
    equal: dict[str, str] = {}
    repeated: set[str] = set()
    for m in node.matchers:
        if m.name == NAME:
            continue
        if m.op == "=" and m.name not in equal and m.name not in repeated:
            equal[m.name] = m.value
        elif m.name in equal:
            del equal[m.name]
            repeated.add(m.name)
    return tuple(sorted(equal.items()))


# ------------------------------------------------------------------------------------------
# instant-vector functions


_MATH_FUNCTIONS: dict[str, Callable[[float], float]] = {
    "abs": abs,
    "ceil": lambda v: float(math.ceil(v)) if math.isfinite(v) else v,
    "floor": lambda v: float(math.floor(v)) if math.isfinite(v) else v,
    "exp": lambda v: _safe(math.exp, v),
    "ln": lambda v: _safe(math.log, v),
    "log2": lambda v: _safe(math.log2, v),
    "log10": lambda v: _safe(math.log10, v),
    "sqrt": lambda v: _safe(math.sqrt, v),
    "sgn": lambda v: math.copysign(1.0, v) if v != 0 and v == v else v,
}


def _safe(fn: Callable[[float], float], v: float) -> float:
    try:
        return fn(v)
    except OverflowError:
        return math.inf
    except ValueError:
        if v == 0:
            return -math.inf
        return math.nan


class _VectorFunction(_Node):
    def __init__(self, name: str, args: list[_Node], text: str):
        self.name = name
        self.args = args
        self.key = f"fn:{text}"

    def _evaluate(self, ctx: _Context) -> Vector:
        name = self.name
        vector: Vector = self.args[0].evaluate(ctx)
        params = [a.evaluate(ctx) for a in self.args[1:]]
        if name in _MATH_FUNCTIONS:
            fn = _MATH_FUNCTIONS[name]
            return [(drop_name(labels), fn(v)) for labels, v in vector]
        if name == "round":
            to = params[0] if params else 1.0
            return [(drop_name(labels), _round(v, to)) for labels, v in vector]
        if name in ("clamp", "clamp_min", "clamp_max"):
            low = params[0] if name in ("clamp", "clamp_min") else -math.inf
            high = params[-1] if name in ("clamp", "clamp_max") else math.inf
            if name == "clamp" and high < low:
                return []
            return [(drop_name(labels), max(low, min(high, v))) for labels, v in vector]
        if name == "sort":
            return sorted(vector, key=lambda s: (math.isnan(s[1]), s[1]))
        if name == "sort_desc":
            return sorted(vector, key=lambda s: (math.isnan(s[1]), -s[1]))
        if name == "timestamp":
            return self._timestamps(ctx, vector)
        if name == "label_replace":
            return _label_replace(vector, *params)
        if name == "label_join":
            return _label_join(vector, params[0], params[1], params[2:])
        if name == "histogram_quantile":  # pragma: no cover - compiled separately
            raise PromQLError("histogram_quantile takes a scalar first")
        raise PromQLError(f"function {name}() is not supported")  # pragma: no cover

    def _timestamps(self, ctx: _Context, vector: Vector) -> Vector:
        arg = self.args[0]
        if not isinstance(arg, _VectorSelector):
            return [(drop_name(labels), ctx.t) for labels, _ in vector]
        t = ctx.t - arg.offset
        out: Vector = []
        for labels, _, series, _ in arg.series(ctx.engine):
            hit = series.at(t)
            if hit is not None and not is_stale(hit[1]):
                out.append((drop_name(labels), hit[0]))
        return out


def _round(v: float, to: float) -> float:
    if not math.isfinite(v):
        return v
    return math.floor(v * (1.0 / to) + 0.5) / (1.0 / to)


_GO_GROUP = re.compile(r"\$(\$|\{(\w+)\}|(\w+))")


def _expand(template: str, match: re.Match[str]) -> str:
    def substitute(m: re.Match[str]) -> str:
        if m.group(1) == "$":
            return "$"
        ref = m.group(2) or m.group(3)
        try:
            group = match.group(int(ref)) if ref.isdigit() else match.group(ref)
        except IndexError:
            return ""
        return group or ""

    return _GO_GROUP.sub(substitute, template)


def _label_replace(vector: Vector, dst: str, replacement: str, src: str, regex: str) -> Vector:
    try:
        pattern = re.compile(regex)
    except re.error as exc:
        raise PromQLError(f"invalid regular expression in label_replace(): {regex!r}") from exc
    out: Vector = []
    for labels, v in vector:
        match = pattern.fullmatch(dict(labels).get(src, ""))
        if match is not None:
            labels = _with(labels, dst, _expand(replacement, match))
        out.append((labels, v))
    return out


def _label_join(vector: Vector, dst: str, sep: str, sources: list[str]) -> Vector:
    out: Vector = []
    for labels, v in vector:
        items = dict(labels)
        out.append((_with(labels, dst, sep.join(items.get(s, "") for s in sources)), v))
    return out


class _HistogramQuantile(_Node):
    def __init__(self, q: _Node, vector: _Node, text: str):
        self.q = q
        self.vector = vector
        self.key = f"fn:{text}"
        # Bucket label sets repeat every evaluation: parse each one's `le` once.
        self._buckets: dict[Labels, tuple[Labels, float]] = {}

    def _evaluate(self, ctx: _Context) -> Vector:
        q = self.q.evaluate(ctx)
        groups: dict[Labels, list[tuple[float, float]]] = {}
        buckets_of = self._buckets
        for labels, v in self.vector.evaluate(ctx):
            bucket = buckets_of.get(labels)
            if bucket is None:
                bucket = buckets_of[labels] = _bucket_of(labels)
            if bucket is not _NOT_A_BUCKET:
                groups.setdefault(bucket[0], []).append((bucket[1], v))
        return [(labels, _bucket_quantile(q, buckets)) for labels, buckets in groups.items()]


_NOT_A_BUCKET: tuple[Labels, float] = ((), math.nan)


def _bucket_of(labels: Labels) -> tuple[Labels, float]:
    """(labels without `le` and `__name__`, upper bound) of a bucket sample, or _NOT_A_BUCKET
    for a sample without a numeric `le` (histogram_quantile ignores those)."""
    le = None
    rest = []
    for kv in labels:
        if kv[0] == "le":
            le = kv[1]
        elif kv[0] != NAME:
            rest.append(kv)
    if le is None:
        return _NOT_A_BUCKET
    try:
        return tuple(rest), float(le)
    except ValueError:
        return _NOT_A_BUCKET


def _bucket_quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    buckets = sorted(buckets, key=lambda b: b[0])
    if not math.isinf(buckets[-1][0]) or buckets[-1][0] < 0:
        return math.nan
    merged: list[list[float]] = []
    for bound, count in buckets:
        if merged and merged[-1][0] == bound:
            merged[-1][1] += count
        else:
            merged.append([bound, count])
    highest = -math.inf
    for b in merged:
        if b[1] > highest:
            highest = b[1]
        elif b[1] < highest:
            b[1] = highest
    if len(merged) < 2:
        return math.nan
    observations = merged[-1][1]
    if observations == 0 or math.isnan(observations):
        return math.nan
    rank = q * observations
    b = 0
    while b < len(merged) - 1 and not merged[b][1] >= rank:
        b += 1
    if b == len(merged) - 1:
        return merged[-2][0]
    if b == 0 and merged[0][0] <= 0:
        return merged[0][0]
    start = 0.0
    end = merged[b][0]
    count = merged[b][1]
    if b > 0:
        start = merged[b - 1][0]
        count -= merged[b - 1][1]
        rank -= merged[b - 1][1]
    return start + (end - start) * (rank / count)


class _Absent(_Node):
    def __init__(self, arg: _Node, text: str):
        self.arg = arg
        self.key = f"fn:{text}"

    def _evaluate(self, ctx: _Context) -> Vector:
        if self.arg.evaluate(ctx):
            return []
        return [(_absent_labels(self.arg), 1.0)]


class _ScalarOf(_Node):
    kind = "scalar"

    def __init__(self, arg: _Node, text: str):
        self.arg = arg
        self.key = f"fn:{text}"

    def _evaluate(self, ctx: _Context) -> float:
        vector = self.arg.evaluate(ctx)
        return vector[0][1] if len(vector) == 1 else math.nan


class _VectorOf(_Node):
    def __init__(self, arg: _Node, text: str):
        self.arg = arg
        self.key = f"fn:{text}"

    def _evaluate(self, ctx: _Context) -> Vector:
        return [((), float(self.arg.evaluate(ctx)))]


class _Time(_Node):
    kind = "scalar"
    key = "fn:time()"

    def evaluate(self, ctx: _Context) -> float:
        return ctx.t


# ------------------------------------------------------------------------------------------
# aggregation


class _Aggregate(_Node):
    def __init__(
        self,
        op: str,
        expr: _Node,
        param: _Node | None,
        labels: list[str] | None,
        without: bool,
        text: str,
    ):
        self.op = op
        self.expr = expr
        self.param = param
        self.labels = frozenset(labels or ())
        self.without = without
        self.key = f"agg:{text}"
        # Label sets repeat every evaluation: remember each one's group.
        self._keys: dict[Labels, Labels] = {}

    def _group_key(self, labels: Labels) -> Labels:
        key = self._keys.get(labels)
        if key is None:
            if self.without:
                key = tuple(kv for kv in labels if kv[0] not in self.labels and kv[0] != NAME)
            else:
                key = tuple(kv for kv in labels if kv[0] in self.labels)
            self._keys[labels] = key
        return key

    def _evaluate(self, ctx: _Context) -> Vector:
        vector: Vector = self.expr.evaluate(ctx)
        op = self.op
        if op == "sum":
            # The hot path of every ratio rule: accumulate in input order, as Prometheus does.
            totals: dict[Labels, float] = {}
            known = self._keys
            for labels, v in vector:
                key = known.get(labels)
                if key is None:
                    key = self._group_key(labels)
                totals[key] = totals.get(key, 0.0) + v
            return list(totals.items())
        param = self.param.evaluate(ctx) if self.param is not None else None
        groups: dict[Labels, list[Sample]] = {}
        for sample in vector:
            groups.setdefault(self._group_key(sample[0]), []).append(sample)
        if op in ("topk", "bottomk"):
            return self._top(groups, param, op == "topk")
        if op == "count_values":
            return self._count_values(groups, str(param))
        out: Vector = []
        for key, samples in groups.items():
            values = [v for _, v in samples]
            out.append((key, self._reduce(op, values, param)))
        return out

    @staticmethod
    def _reduce(op: str, values: list[float], param: Any) -> float:
        if op == "sum":
            total = 0.0
            for v in values:
                total += v
            return total
        if op == "avg":
            return _mean(values)
        if op == "min":
            return _nan_min(values)
        if op == "max":
            return _nan_max(values)
        if op == "count":
            return float(len(values))
        if op == "group":
            return 1.0
        if op == "stdvar":
            return _variance(values)
        if op == "stddev":
            return math.sqrt(_variance(values))
        if op == "quantile":
            return _quantile(float(param), values)
        raise PromQLError(f"aggregation {op}() is not supported")  # pragma: no cover

    @staticmethod
    def _top(groups: dict[Labels, list[Sample]], k: Any, largest: bool) -> Vector:
        count = int(k) if k is not None and math.isfinite(k) else 0
        out: Vector = []
        if count < 1:
            return out
        for samples in groups.values():
            def order(s: Sample) -> tuple[bool, float]:
                return (math.isnan(s[1]), -s[1] if largest else s[1])

            out.extend(sorted(samples, key=order)[:count])
        return out

    def _count_values(self, groups: dict[Labels, list[Sample]], label: str) -> Vector:
        out: Vector = []
        for key, samples in groups.items():
            counts: dict[str, float] = {}
            for _, v in samples:
                text = _go_float(v)
                counts[text] = counts.get(text, 0.0) + 1
            for text, n in counts.items():
                out.append((_with(key, label, text), n))
        return out


def _go_float(v: float) -> str:
    """strconv.FormatFloat(v, 'f', -1, 64): the shortest decimal that round-trips."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    text = format(Decimal(repr(v)), "f")
    return text[:-2] if text.endswith(".0") else text


# ------------------------------------------------------------------------------------------
# binary operators


class _Binary(_Node):
    def __init__(
        self,
        op: str,
        lhs: _Node,
        rhs: _Node,
        return_bool: bool,
        card: str,
        on: bool,
        matching: list[str],
        include: list[str],
        text: str,
    ):
        self.op = op
        self.lhs = lhs
        self.rhs = rhs
        self.return_bool = return_bool
        self.card = card
        self.on = on
        self.matching = frozenset(matching)
        self.include = include
        self.key = f"bin:{text}"
        self.kind = "scalar" if lhs.kind == rhs.kind == "scalar" else "vector"

    def _evaluate(self, ctx: _Context) -> Any:
        left = self.lhs.evaluate(ctx)
        right = self.rhs.evaluate(ctx)
        op = self.op
        if self.lhs.kind == "scalar" and self.rhs.kind == "scalar":
            if op in _COMPARISON:
                return 1.0 if _COMPARISON[op](left, right) else 0.0
            return _ARITHMETIC[op](left, right)
        if self.lhs.kind == "scalar":
            return self._vector_scalar(right, left, swapped=True)
        if self.rhs.kind == "scalar":
            return self._vector_scalar(left, right, swapped=False)
        if op in _SET_OPS:
            return self._set_op(left, right)
        return self._vector_vector(left, right)

    def _vector_scalar(self, vector: Vector, scalar: float, swapped: bool) -> Vector:
        op = self.op
        out: Vector = []
        if op in _COMPARISON:
            compare = _COMPARISON[op]
            for labels, v in vector:
                keep = compare(scalar, v) if swapped else compare(v, scalar)
                if self.return_bool:
                    out.append((drop_name(labels), 1.0 if keep else 0.0))
                elif keep:
                    out.append((labels, v))
            return out
        fn = _ARITHMETIC[op]
        for labels, v in vector:
            out.append((drop_name(labels), fn(scalar, v) if swapped else fn(v, scalar)))
        return out

    def _signature(self, labels: Labels) -> Labels:
        if self.on:
            return tuple(kv for kv in labels if kv[0] in self.matching)
        return tuple(kv for kv in labels if kv[0] not in self.matching and kv[0] != NAME)

    def _set_op(self, left: Vector, right: Vector) -> Vector:
        op = self.op
        right_sigs = {self._signature(labels) for labels, _ in right}
        if op == "and":
            return [s for s in left if self._signature(s[0]) in right_sigs]
        if op == "unless":
            return [s for s in left if self._signature(s[0]) not in right_sigs]
        left_sigs = {self._signature(labels) for labels, _ in left}
        return left + [s for s in right if self._signature(s[0]) not in left_sigs]

    def _vector_vector(self, left: Vector, right: Vector) -> Vector:
        op = self.op
        card = self.card
        if card == "many_to_many":
            raise PromQLError(f"operator {op} does not support many-to-many matching")
        if card == "one_to_many":
            left, right = right, left
        one_side: dict[Labels, Sample] = {}
        for sample in right:
            sig = self._signature(sample[0])
            if sig in one_side:
                raise PromQLError(
                    f"found duplicate series for the match group {_format_labels(sig)} on the "
                    f"{'left' if card == 'one_to_many' else 'right'} hand-side of the operation: "
                    "many-to-many matching not allowed: matching labels must be unique on one side"
                )
            one_side[sig] = sample
        comparison = op in _COMPARISON
        fn = _COMPARISON[op] if comparison else _ARITHMETIC[op]
        drop = not comparison or self.return_bool
        matched: dict[Labels, set[Labels] | None] = {}
        out: Vector = []
        for labels, v in left:
            sig = self._signature(labels)
            other = one_side.get(sig)
            if other is None:
                continue
            lv, rv = v, other[1]
            if card == "one_to_many":
                lv, rv = rv, lv
            if comparison:
                keep = fn(lv, rv)
                if self.return_bool:
                    value = 1.0 if keep else 0.0
                elif not keep:
                    continue
                else:
                    value = lv
            else:
                value = fn(lv, rv)
            metric = self._result_labels(labels, other[0], drop)
            if card == "one_to_one":
                if sig in matched:
                    raise PromQLError(
                        "multiple matches for labels: many-to-one matching must be explicit "
                        "(group_left/group_right)"
                    )
                matched[sig] = None
            else:
                inserted = matched.setdefault(sig, set())
                assert inserted is not None
                if metric in inserted:
                    raise PromQLError(
                        "multiple matches for labels: grouping labels must ensure unique matches"
                    )
                inserted.add(metric)
            out.append((metric, value))
        return out

    def _result_labels(self, labels: Labels, one: Labels, drop: bool) -> Labels:
        if drop:
            labels = drop_name(labels)
        if self.card == "one_to_one":
            labels = _keep(labels, self.matching) if self.on else _drop(labels, self.matching)
        if self.include:
            items = dict(labels)
            one_items = dict(one)
            for name in self.include:
                value = one_items.get(name, "")
                if value:
                    items[name] = value
                else:
                    items.pop(name, None)
            labels = tuple(sorted(items.items()))
        return labels


class _Negate(_Node):
    def __init__(self, expr: _Node, text: str):
        self.expr = expr
        self.kind = expr.kind
        self.key = f"neg:{text}"

    def _evaluate(self, ctx: _Context) -> Any:
        value = self.expr.evaluate(ctx)
        if self.kind == "scalar":
            return -value
        return [(drop_name(labels), -v) for labels, v in value]


# ------------------------------------------------------------------------------------------
# compiler: promql_parser AST -> nodes

_RANGE_FUNCTIONS = {
    "rate", "irate", "increase", "delta", "idelta", "deriv", "predict_linear", "changes",
    "resets", "quantile_over_time", *_OVER_TIME,
}
_VECTOR_FUNCTIONS = {
    *_MATH_FUNCTIONS, "round", "clamp", "clamp_min", "clamp_max", "sort", "sort_desc",
    "timestamp", "label_replace", "label_join",
}
_AGGREGATIONS = {
    "sum", "avg", "min", "max", "count", "group", "stddev", "stdvar", "topk", "bottomk",
    "quantile", "count_values",
}
SUPPORTED_FUNCTIONS = frozenset(
    _RANGE_FUNCTIONS | _VECTOR_FUNCTIONS
    | {"histogram_quantile", "absent", "absent_over_time", "scalar", "vector", "time"}
)


def _seconds(delta: Any) -> float:
    return 0.0 if delta is None else delta.total_seconds()


def _enum_name(value: Any) -> str:
    return str(value).split(".")[-1]


def compile_query(text: str) -> _Node:
    """Parse and compile a query; raises `PromQLError` for syntax errors and unsupported
    constructs (naming them)."""
    if not isinstance(text, str) or not text.strip():
        raise PromQLError("empty query")
    try:
        ast = pp.parse(text)
    except (ValueError, TypeError) as exc:
        raise PromQLError(f"parse error: {exc}") from exc
    return _compile(ast)


def _compile(e: Any) -> _Node:
    if isinstance(e, pp.ParenExpr):
        return _compile(e.expr)
    if isinstance(e, pp.NumberLiteral):
        return _Number(float(e.val))
    if isinstance(e, pp.StringLiteral):
        return _String(e.val)
    if isinstance(e, pp.VectorSelector):
        return _compile_selector(e)
    if isinstance(e, pp.MatrixSelector):
        return _MatrixSelector(_compile_selector(e.vector_selector), _seconds(e.range), str(e))
    if isinstance(e, pp.SubqueryExpr):
        raise PromQLError(f"subqueries are not supported: {e}")
    if isinstance(e, pp.UnaryExpr):
        inner = _compile(e.expr)
        _require(inner, ("scalar", "vector"), "unary minus")
        return _Negate(inner, str(e))
    if isinstance(e, pp.Call):
        return _compile_call(e)
    if isinstance(e, pp.AggregateExpr):
        return _compile_aggregate(e)
    if isinstance(e, pp.BinaryExpr):
        return _compile_binary(e)
    raise PromQLError(f"unsupported expression: {e}")  # pragma: no cover


def _compile_selector(e: Any) -> _VectorSelector:
    if e.at is not None:
        raise PromQLError(f"the @ modifier is not supported: {e}")
    if e.matchers.or_matchers:
        raise PromQLError(f"'or' inside label matchers is not supported: {e}")
    matchers = [_compile_matcher(m) for m in e.matchers.matchers]
    return _VectorSelector(e.name, matchers, _seconds(e.offset), str(e))


def _require(node: _Node, kinds: tuple[str, ...], where: str) -> None:
    if node.kind not in kinds:
        raise PromQLError(f"{where} expects {' or '.join(kinds)}, got {node.kind}")


def _compile_call(e: Any) -> _Node:
    name = e.func.name
    text = str(e)
    args = [_compile(a) for a in e.args]
    if name not in SUPPORTED_FUNCTIONS:
        raise PromQLError(f"function {name}() is not supported")
    if name in _RANGE_FUNCTIONS:
        matrix = args[0] if name != "quantile_over_time" else args[1]
        if not isinstance(matrix, _MatrixSelector):
            raise PromQLError(f"{name}() needs a range selector argument (subqueries unsupported)")
        params = args[:1] if name == "quantile_over_time" else args[1:]
        return _RangeFunction(name, matrix, params, text)
    if name == "absent_over_time":
        if not isinstance(args[0], _MatrixSelector):
            raise PromQLError("absent_over_time() needs a range selector argument")
        return _AbsentOverTime(args[0], text)
    if name == "histogram_quantile":
        return _HistogramQuantile(args[0], args[1], text)
    if name == "absent":
        return _Absent(args[0], text)
    if name == "scalar":
        return _ScalarOf(args[0], text)
    if name == "vector":
        return _VectorOf(args[0], text)
    if name == "time":
        return _Time()
    return _VectorFunction(name, args, text)


def _compile_aggregate(e: Any) -> _Node:
    op = str(e.op)
    if op not in _AGGREGATIONS:
        raise PromQLError(f"aggregation {op}() is not supported")
    expr = _compile(e.expr)
    _require(expr, ("vector",), f"{op}()")
    param = _compile(e.param) if e.param is not None else None
    labels: list[str] | None = None
    without = False
    if e.modifier is not None:
        labels = list(e.modifier.labels)
        without = _enum_name(e.modifier.type) == "Without"
    return _Aggregate(op, expr, param, labels, without, str(e))


_CARD = {
    "OneToOne": "one_to_one",
    "ManyToOne": "many_to_one",
    "OneToMany": "one_to_many",
    "ManyToMany": "many_to_many",
}


def _compile_binary(e: Any) -> _Node:
    op = str(e.op)
    if op not in _ARITHMETIC and op not in _COMPARISON and op not in _SET_OPS:
        raise PromQLError(f"binary operator {op} is not supported")
    lhs, rhs = _compile(e.lhs), _compile(e.rhs)
    for side in (lhs, rhs):
        _require(side, ("scalar", "vector"), f"operator {op}")
    m = e.modifier
    return_bool = bool(m is not None and m.return_bool)
    if op in _COMPARISON and lhs.kind == rhs.kind == "scalar" and not return_bool:
        raise PromQLError(f"comparisons between scalars must use bool: {e}")
    card = "many_to_many" if op in _SET_OPS else "one_to_one"
    on = False
    matching: list[str] = []
    include: list[str] = []
    if m is not None:
        if m.card is not None and op not in _SET_OPS:
            card = _CARD[_enum_name(m.card)]
        if m.matching is not None:
            on = _enum_name(m.matching.type) == "Include"
            matching = list(m.matching.labels)
        include = list(m.group_labels or [])
        fill = getattr(m, "fill_values", None)
        if fill is not None and (fill.lhs is not None or fill.rhs is not None):
            raise PromQLError(f"fill values in vector matching are not supported: {e}")
    return _Binary(op, lhs, rhs, return_bool, card, on, matching, include, str(e))


# ------------------------------------------------------------------------------------------
# the engine


class PromQLEngine:
    """Instant and range queries over a `SeriesStore`.

    `share_cache(t)` lets the alert engine evaluate many rules at one time with one cache.
    """

    def __init__(self, store: SeriesStore) -> None:
        self.store = store
        self._compiled: dict[str, _Node] = {}
        self._selectors: dict[str, _SelectorIndex] = {}
        self._aux_state: dict[int, _SeriesAux] = {}
        self._cache_t: float | None = None
        self._cache: dict[str, Any] = {}

    # public API ---------------------------------------------------------------------------
    def compile(self, query: str) -> _Node:
        node = self._compiled.get(query)
        if node is None:
            node = compile_query(query)
            self._compiled[query] = node
        return node

    def instant(self, query: str, t: float) -> list[dict[str, Any]] | float | str:
        """Evaluate at t: a list of {"labels", "value"} for a vector, a float for a scalar."""
        node = self.compile(query)
        if node.kind == "matrix":
            return [
                {
                    "labels": dict(series.key),
                    "values": [
                        [ts, v] for ts, v in zip(series.times[lo:hi], series.values[lo:hi])
                    ],
                }
                for _, series, lo, hi in self.evaluate_node(node, t)
            ]
        result = self.evaluate_node(node, t)
        if node.kind != "vector":
            return result
        return [{"labels": dict(labels), "value": v} for labels, v in sorted(result)]

    def range(
        self, query: str, start: float, end: float, step: float
    ) -> list[dict[str, Any]]:
        """Evaluate at start, start+step, …, end; one entry per label set with its points."""
        if step <= 0:
            raise PromQLError("range query step must be positive")
        if end < start:
            raise PromQLError("range query end is before start")
        if (end - start) / step > 11000:
            raise PromQLError("range query exceeds 11000 points; raise the step")
        node = self.compile(query)
        if node.kind not in ("vector", "scalar"):
            raise PromQLError(f"range queries need a vector or scalar expression, got {node.kind}")
        points: dict[Labels, list[list[float]]] = {}
        n = int(math.floor((end - start) / step + 1e-9))
        for i in range(n + 1):
            t = start + i * step
            result = self.evaluate_node(node, t)
            if node.kind == "scalar":
                points.setdefault((), []).append([t, result])
                continue
            for labels, v in result:
                points.setdefault(labels, []).append([t, v])
        return [{"labels": dict(labels), "values": values} for labels, values in sorted(points.items())]

    def evaluate_node(self, node: _Node, t: float) -> Any:
        """Evaluate a compiled node, sharing the sub-expression cache of time t."""
        if self._cache_t != t:
            self._cache_t = t
            self._cache = {}
        return node.evaluate(_Context(self, t, self._cache))

    def vector(self, query: str, t: float) -> Vector:
        """Raw (labels, value) pairs of a vector query (labels as sorted tuples)."""
        node = self.compile(query)
        if node.kind != "vector":
            raise PromQLError(f"expected a vector expression, got {node.kind}: {query}")
        return self.evaluate_node(node, t)

    # internals used by nodes ---------------------------------------------------------------
    def _select(self, selector: _VectorSelector) -> list[tuple[Labels, Labels, Series, _SeriesAux]]:
        index = self._selectors.get(selector.select_key)
        if index is None:
            index = _SelectorIndex()
            self._selectors[selector.select_key] = index
        if selector.name is not None:
            candidates = self.store.series(selector.name)
            if len(candidates) == index.seen:
                return index.matched
            new = candidates[index.seen :]
            index.seen = len(candidates)
        else:
            everything = list(self.store)
            if len(everything) == index.seen:
                return index.matched
            new = everything[index.seen :]
            index.seen = len(everything)
        added = False
        for series in new:
            labels = dict(series.key)
            if all(m.matches(labels) for m in selector.matchers):
                index.matched.append((series.key, drop_name(series.key), series, self._aux(series)))
                added = True
        if added:
            index.matched.sort(key=lambda item: item[0])
        return index.matched

    def _aux(self, series: Series) -> _SeriesAux:
        """The shared running counts of a series (refreshed by range selectors as it grows);
        keyed by identity, since the store never drops a series."""
        aux = self._aux_state.get(id(series))
        if aux is None:
            aux = _SeriesAux()
            self._aux_state[id(series)] = aux
        return aux
