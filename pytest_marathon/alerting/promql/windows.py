"""One series' samples inside a range window, and Prometheus' extrapolation over them.

`rate`, `increase` and `delta` are read by nearly every alert rule at every evaluation, so each
series carries running state (`_SeriesAux`: where it last held a stale marker or a counter
reset) that lets a clean window skip the per-sample loop; any other window is read sample by
sample, so the answer never depends on the shortcut. The extrapolation follows Prometheus'
`extrapolatedRate` operation for operation, so results agree to the last bit.
"""

from __future__ import annotations

import math

from pytest_marathon.alerting.promql.values import Labels
from pytest_marathon.tsdb import Series, is_stale

# One series' samples in a range window: labels, series, first index, end index (exclusive).
Window = tuple[Labels, Series, int, int, "_SeriesAux"]


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
    markers or counter resets; clean windows take the fast path in `_MatrixSelector.extrapolate`."""
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
