"""Binary operators, set operators (and/or/unless), vector matching, and unary minus.

Vector matching follows Prometheus: one-to-one by default, `group_left`/`group_right` for
many-to-one, and the same errors Prometheus raises for duplicate series on the "one" side or
ambiguous matches, since a silently arbitrary pairing would make an alert fire on the wrong
data. Arithmetic and `bool` comparisons drop `__name__`; filtering comparisons keep it.
"""

from __future__ import annotations

from typing import Any

from pytest_marathon.alerting.promql.nodes import _Context, _Node
from pytest_marathon.alerting.promql.values import (
    _ARITHMETIC,
    _COMPARISON,
    _SET_OPS,
    NAME,
    ByIdentity,
    Labels,
    PromQLError,
    Sample,
    Vector,
    _drop,
    _format_labels,
    _keep,
    drop_name,
)


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
        self._signature = ByIdentity(self._signature_of)
        self._drop_name = ByIdentity(drop_name)

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
                    out.append((self._drop_name(labels), 1.0 if keep else 0.0))
                elif keep:
                    out.append((labels, v))
            return out
        fn = _ARITHMETIC[op]
        without_name = self._drop_name
        for labels, v in vector:
            out.append((without_name(labels), fn(scalar, v) if swapped else fn(v, scalar)))
        return out

    def _signature_of(self, labels: Labels) -> Labels:
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
