"""An in-memory Prometheus-shaped time-series store in virtual time.

The twin scrapes into it and the PromQL evaluator reads from it. Samples of one series arrive in
time order, so each series keeps two parallel arrays and lookups are binary searches. Staleness
follows Prometheus: an instant selector sees a series only if it has a sample within the lookback
window (5 minutes) before the evaluation time, and a series whose newest sample is a staleness
marker (`STALE_NAN`, Prometheus' special NaN written when a target or series disappears) is
absent at once instead of lingering for the lookback window.
"""

from __future__ import annotations

import math
import struct
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

LOOKBACK_SECONDS = 300.0

LabelSet = tuple[tuple[str, str], ...]

_STALE_BITS = 0x7FF0000000000002
STALE_NAN: float = struct.unpack("<d", struct.pack("<Q", _STALE_BITS))[0]
_PACK_DOUBLE = struct.Struct("<d").pack
_STALE_BYTES = _PACK_DOUBLE(STALE_NAN)


def is_stale(value: float) -> bool:
    """True for Prometheus' staleness marker (a NaN with a fixed payload, unlike other NaNs)."""
    return math.isnan(value) and _PACK_DOUBLE(value) == _STALE_BYTES


def label_key(name: str, labels: Mapping[str, str]) -> LabelSet:
    """The identity of a series: its sorted labels including ``__name__``."""
    items = dict(labels)
    items["__name__"] = name
    return tuple(sorted(items.items()))


@dataclass
class Series:
    """One series: immutable labels, append-only samples.

    `quiet_since` is kept by every write so that readers can tell a steady series without
    reading its samples: every sample after that time holds one and the same finite value as
    the sample at that time (-inf: the whole series is one finite value). A `rate` window
    starting at or after it is flat, which is most windows of an alert rule pack.
    """

    key: LabelSet
    times: array = field(default_factory=lambda: array("d"))
    values: array = field(default_factory=lambda: array("d"))
    quiet_since: float = -math.inf

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.key)

    @property
    def name(self) -> str:
        return dict(self.key)["__name__"]

    def append(self, t: float, v: float) -> None:
        times = self.times
        if times and t <= times[-1]:
            if t < times[-1]:
                raise ValueError(f"out-of-order sample for {self.name} at t={t}")
            self.values[-1] = v
            self.quiet_since = quiet_since(times, self.values)
            return
        if times:
            last = self.values[-1]
            if not (v == last and v - v == 0.0):
                self.quiet_since = times[-1]
        elif v - v != 0.0:  # not finite
            self.quiet_since = t
        times.append(t)
        self.values.append(v)

    def window(self, start: float, end: float) -> tuple[array, array]:
        """Samples with start < t <= end (Prometheus range-selector semantics)."""
        lo = bisect_right(self.times, start)
        hi = bisect_right(self.times, end)
        return self.times[lo:hi], self.values[lo:hi]

    def at(self, t: float, lookback: float = LOOKBACK_SECONDS) -> tuple[float, float] | None:
        """The newest sample at or before t within the lookback window, if any."""
        hi = bisect_right(self.times, t)
        if hi == 0:
            return None
        ts = self.times[hi - 1]
        if ts <= t - lookback:
            return None
        value = self.values[hi - 1]
        if value != value and is_stale(value):
            return None
        return ts, value

    def first_index_after(self, t: float) -> int:
        return bisect_left(self.times, t)


def quiet_since(times: array, values: array) -> float:
    """`Series.quiet_since` from scratch: the time before the newest change of value (a NaN,
    an infinity or a stale marker counts as a change at every sample it is in)."""
    for i in range(len(values) - 1, 0, -1):
        v = values[i]
        if not (v == values[i - 1] and v - v == 0.0):
            return times[i - 1]
    if values and values[0] - values[0] != 0.0:
        return times[0]
    return -math.inf


class SeriesStore:
    """All series of one run, indexed by metric name."""

    def __init__(self) -> None:
        self._by_key: dict[LabelSet, Series] = {}
        self._by_name: dict[str, list[Series]] = {}

    def append(self, name: str, labels: Mapping[str, str], t: float, value: float) -> None:
        key = label_key(name, labels)
        series = self._by_key.get(key)
        if series is None:
            series = Series(key)
            self._by_key[key] = series
            self._by_name.setdefault(name, []).append(series)
        series.append(t, float(value))

    def series(self, name: str) -> list[Series]:
        """Every series of one metric name, in creation order (deterministic)."""
        return self._by_name.get(name, [])

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def __iter__(self) -> Iterator[Series]:
        return iter(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def sample_count(self) -> int:
        return sum(len(s.times) for s in self._by_key.values())

    def extend(self, samples: Iterable[tuple[str, Mapping[str, str], float, float]]) -> None:
        for name, labels, t, value in samples:
            self.append(name, labels, t, value)
