"""histogram_quantile over classic (`le`-labelled) buckets.

It follows Prometheus' `bucketQuantile`: buckets with the same bound are merged, counts are
forced monotonic, and the quantile is interpolated linearly inside the bucket holding its rank,
so latency alerts fire at the values they would under Prometheus. Samples without a numeric
`le` are ignored, as Prometheus ignores them.
"""

from __future__ import annotations

import math

from pytest_marathon.alerting.promql.nodes import _Context, _Node
from pytest_marathon.alerting.promql.reductions import _quantile_outside
from pytest_marathon.alerting.promql.values import NAME, Labels, Vector


class _HistogramQuantile(_Node):
    def __init__(self, q: _Node, vector: _Node, text: str):
        self.q = q
        self.vector = vector
        self.key = f"fn:{text}"
        # Bucket label sets repeat every evaluation: parse each one's `le` once.
        self._buckets: dict[Labels, tuple[Labels, float]] = {}
        # The plan for the last input label sequence: (sequence, [(group labels, [(input
        # position, bound)] sorted by bound)] in order of first appearance)
        self._plan: tuple[list[Labels], list[tuple[Labels, list[tuple[int, float]]]]] | None = None

    def _evaluate(self, ctx: _Context) -> Vector:
        q = self.q.evaluate(ctx)
        vector = self.vector.evaluate(ctx)
        sequence = [sample[0] for sample in vector]
        plan = self._plan
        if plan is None or plan[0] != sequence:
            plan = self._plan = (sequence, self._group(sequence))
        out: Vector = []
        for labels, members in plan[1]:
            buckets = [(bound, vector[i][1]) for i, bound in members]
            out.append((labels, _bucket_quantile(q, buckets, presorted=True)))
        return out

    def _group(self, sequence: list[Labels]) -> list[tuple[Labels, list[tuple[int, float]]]]:
        """Each group's bucket positions, sorted by bound as `_bucket_quantile` sorts them (a
        stable sort: equal bounds keep input order, which decides how their counts add up)."""
        groups: dict[Labels, list[tuple[int, float]]] = {}
        buckets_of = self._buckets
        for i, labels in enumerate(sequence):
            bucket = buckets_of.get(labels)
            if bucket is None:
                bucket = buckets_of[labels] = _bucket_of(labels)
            if bucket is not _NOT_A_BUCKET:
                groups.setdefault(bucket[0], []).append((i, bucket[1]))
        return [(labels, sorted(members, key=lambda m: m[1])) for labels, members in groups.items()]


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


def _bucket_quantile(q: float, buckets: list[tuple[float, float]], presorted: bool = False) -> float:
    if (outside := _quantile_outside(q)) is not None:
        return outside
    if not presorted:
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
