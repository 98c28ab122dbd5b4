"""Functions of one range vector: rate and friends, the `*_over_time` family, deriv and
predict_linear, changes and resets.

`rate`, `increase` and `delta` are delegated to the matrix selector's fast path (see
`windows`); everything else works on a window's points with stale markers removed. A window too
short for a function yields no sample rather than an invented zero, as in Prometheus.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from pytest_marathon.alerting.promql.nodes import _Context, _Node
from pytest_marathon.alerting.promql.reductions import (
    _mean,
    _nan_max,
    _nan_min,
    _quantile,
    _variance,
)
from pytest_marathon.alerting.promql.selectors import _MatrixSelector
from pytest_marathon.alerting.promql.values import Labels, PromQLError, Vector, _div
from pytest_marathon.alerting.promql.windows import Window, _window_points


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
