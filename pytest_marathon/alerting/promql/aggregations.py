"""Aggregation operators: sum, avg, min, max, count, group, stddev, stdvar, topk, bottomk,
quantile and count_values, with `by`/`without` grouping.

`sum` is the hot path of every ratio rule, so it accumulates in input order (the order of
additions decides the last bit, as in Prometheus) with a memo of each label set's group. The
other operators share the reductions of the `*_over_time` functions, and `count_values` formats
values as Go's `strconv.FormatFloat` does so its label values match Prometheus'.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from pytest_marathon.alerting.promql.nodes import _Context, _Node
from pytest_marathon.alerting.promql.reductions import (
    _mean,
    _nan_max,
    _nan_min,
    _quantile,
    _variance,
)
from pytest_marathon.alerting.promql.values import NAME, Labels, PromQLError, Sample, Vector, _with

#: Entries kept by identity before the memo starts over (only label tuples made afresh at each
#: evaluation, by an operator upstream, would ever fill it).
_BY_ID_CAP = 65536


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
        self._groups: dict[Labels, Labels] = {}  # one object per distinct group
        self._by_id: dict[int, tuple[Labels, Labels]] = {}

    def _group_key(self, labels: Labels) -> Labels:
        key = self._keys.get(labels)
        if key is None:
            if self.without:
                key = tuple(kv for kv in labels if kv[0] not in self.labels and kv[0] != NAME)
            else:
                key = tuple(kv for kv in labels if kv[0] in self.labels)
            self._keys[labels] = key
        return key

    def _canonical_group(self, labels: Labels) -> Labels:
        key = self._group_key(labels)
        return self._groups.setdefault(key, key)

    def _evaluate(self, ctx: _Context) -> Vector:
        vector: Vector = self.expr.evaluate(ctx)
        op = self.op
        if op == "sum":
            # The hot path of every ratio rule: accumulate in input order, as Prometheus does.
            # A selector hands out the same label tuples at every evaluation, so each one's
            # group is found by identity (hashing a label tuple is the cost of a dict lookup),
            # and groups are canonical objects, so the running totals are keyed by identity too.
            by_id = self._by_id
            if len(by_id) > _BY_ID_CAP:  # label tuples made afresh at every evaluation
                by_id.clear()
            totals: dict[int, list[Any]] = {}
            for labels, v in vector:
                hit = by_id.get(id(labels))
                if hit is None or hit[0] is not labels:
                    # holding `labels` keeps its id from being reused while the entry lives
                    hit = by_id[id(labels)] = (labels, self._canonical_group(labels))
                key = hit[1]
                slot = totals.get(id(key))
                if slot is None:
                    totals[id(key)] = [key, 0.0 + v]
                else:
                    slot[1] += v
            return [(key, total) for key, total in totals.values()]
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
