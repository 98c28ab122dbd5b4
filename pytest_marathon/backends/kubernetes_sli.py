"""The entry point's service level on a cluster, from the span metrics Prometheus holds.

The twin measures its SLI on the load generator's side, request by request, each tick: the
request rate, the share that failed (no answer, or an HTTP status of 400 or more) and the share
slower than the app's `slow_seconds`. A cluster has the same requests as the entry service's
HTTP server spans, which the collector turns into `traces_span_metrics_calls_total` and
`traces_span_metrics_duration_milliseconds` (deploy/otel-collector.yaml, twin/spanmetrics.py),
so per tick:

    q  sum(rate(calls{service_name=<entry>, span_kind="SPAN_KIND_SERVER"}[w]))
    e  the same over http_response_status_code =~ "[45].." , divided by q
    l  the share of the duration histogram above slow_seconds, divided by q

What this cannot see (docs/kubernetes-backend.md): a request the entry service never answered
(refused, or abandoned by the client) leaves no server span, so while the entry point is down
the rate falls instead of the failed share rising; rates are over a window `w` (default 1 m,
four scrapes) rather than one tick; `slow_seconds` between two bucket bounds is interpolated
linearly inside the bucket, as `histogram_quantile` does; and the newest `lag` seconds are not
reported until the collector has flushed and Prometheus has scraped them.
"""

from __future__ import annotations

import math
from typing import Any

from pytest_marathon.backends.base import SliSample

CALLS = "traces_span_metrics_calls_total"
BUCKETS = "traces_span_metrics_duration_milliseconds_bucket"


class PromQLSli:
    def __init__(self, promql: Any, *, service: str, slow_seconds: float, tick: float,
                 window: str = "1m", lag: float = 30.0) -> None:
        self.promql = promql
        self.tick = tick
        self.lag = lag
        self.slow_ms = slow_seconds * 1000.0
        match = f'service_name="{service}",span_kind="SPAN_KIND_SERVER"'
        self._total = f"sum(rate({CALLS}{{{match}}}[{window}]))"
        self._failed = f'sum(rate({CALLS}{{{match},http_response_status_code=~"[45].."}}[{window}]))'
        self._buckets = f"sum by (le) (rate({BUCKETS}{{{match}}}[{window}]))"

    def samples(self, since: float | None, now: float) -> list[SliSample]:
        """Samples at each tick after `since` (from the first tick after 0 when None) up to
        `now - lag`."""
        first = self.tick if since is None else (math.floor(since / self.tick + 1e-9) + 1) * self.tick
        last = math.floor((now - self.lag) / self.tick + 1e-9) * self.tick
        if last < first:
            return []
        total = _series(self.promql.range(self._total, first, last, self.tick))
        failed = _series(self.promql.range(self._failed, first, last, self.tick))
        buckets: dict[float, dict[float, float]] = {}
        for result in self.promql.range(self._buckets, first, last, self.tick):
            bound = float(result["labels"].get("le", "+Inf"))
            for t, value in result["values"]:
                buckets.setdefault(round(t, 3), {})[bound] = value
        out = []
        steps = round((last - first) / self.tick)
        for i in range(steps + 1):
            t = round(first + i * self.tick, 3)
            q = total.get(t, 0.0)
            if not math.isfinite(q) or q <= 0:
                out.append(SliSample(t, 0.0, 0.0, 0.0))
                continue
            e = failed.get(t, 0.0) / q
            slow = max(0.0, q - _at_most(buckets.get(t, {}), self.slow_ms)) / q
            out.append(SliSample(t, round(q, 6), round(min(e, 1.0), 6), round(min(slow, 1.0), 6)))
        return out


def _series(results: list[dict[str, Any]]) -> dict[float, float]:
    return {round(t, 3): value for result in results for t, value in result["values"]}


def _at_most(cumulative: dict[float, float], bound: float) -> float:
    """The rate of observations at most `bound` from cumulative bucket rates, linear inside the
    bucket that holds the bound."""
    below_bound, below_rate = 0.0, 0.0
    for le in sorted(cumulative):
        rate = cumulative[le]
        if le >= bound:
            if math.isinf(le):
                return below_rate
            share = (bound - below_bound) / (le - below_bound) if le > below_bound else 1.0
            return below_rate + (rate - below_rate) * share
        below_bound, below_rate = le, rate
    return below_rate
