"""Aggregation operators: sum, avg, min, max, count, group, stddev, stdvar, topk, bottomk,
quantile and count_values, with `by`/`without` grouping.

`sum` is the hot path of every ratio rule, so it accumulates in input order (the order of
additions decides the last bit, as in Prometheus) with a plan of each input position's group. The
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
        # `sum`'s plan for the last input label sequence: (sequence, group slot of each
        # position, groups in order of first appearance)
        self._plan: tuple[list[Labels], list[int], list[Labels]] | None = None

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

    def _sum(self, vector: Vector) -> Vector:
        """The hot path of every ratio rule: accumulate in input order, as Prometheus does.

        A selector hands out the same label tuples in the same order at nearly every
        evaluation, so the group of each input position (and the groups' order of first
        appearance, the output order) is planned once and reused while the input's label
        sequence stays the same; comparing the sequence is one C-level list comparison."""
        sequence = [sample[0] for sample in vector]
        plan = self._plan
        if plan is None or plan[0] != sequence:
            slot_of: dict[int, int] = {}
            keys: list[Labels] = []
            slots: list[int] = []
            for labels in sequence:
                key = self._canonical_group(labels)
                slot = slot_of.get(id(key))
                if slot is None:
                    slot = slot_of[id(key)] = len(keys)
                    keys.append(key)
                slots.append(slot)
            plan = self._plan = (sequence, slots, keys)
        totals: list[Any] = [None] * len(plan[2])
        for slot, sample in zip(plan[1], vector):
            total = totals[slot]
            totals[slot] = 0.0 + sample[1] if total is None else total + sample[1]
        return list(zip(plan[2], totals))

    def _evaluate(self, ctx: _Context) -> Vector:
        vector: Vector = self.expr.evaluate(ctx)
        op = self.op
        if op == "sum":
            return self._sum(vector)
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
