"""Reductions of a list of values, shared by the `*_over_time` functions and aggregations.

Both must agree with Prometheus to the last bit: `avg` is Prometheus' incremental mean (which
survives values near the float limit and infinities), variance is Welford's, quantiles
interpolate between ranks and answer +/-Inf for q outside [0, 1], and min/max ignore NaN unless
every value is NaN, where Python's `min` would depend on the order of the values.
"""

from __future__ import annotations

import math


def _quantile_outside(q: float) -> float | None:
    """What Prometheus answers for a φ it cannot rank (NaN, below 0, above 1); None for 0 ≤ φ ≤ 1.
    Shared by quantile/quantile_over_time and histogram_quantile, which agree on it."""
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    return None


def _quantile(q: float, values: list[float]) -> float:
    if not values:
        return math.nan
    if (outside := _quantile_outside(q)) is not None:
        return outside
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
