"""Does a rule read only series that exist? Every selector and every label it groups, matches or
rewrites by, checked against an inventory of what the exporters produce (`deploy/series.py`).

A rule whose metric name or label no exporter produces evaluates to nothing and never fires,
silently; this check names the rule and the missing name instead. It walks the `promql_parser`
AST and tracks, for each sub-expression, which labels its result can carry: a selector carries
its metric's labels, `by (...)` keeps the listed ones, `without (...)` drops them, `label_replace`
adds its destination, a binary operation keeps its left side's (plus `group_left` labels).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import promql_parser as pp

Inventory = Callable[[str], "frozenset[str] | None"]


def missing_series(expr: str, labels_of: Inventory) -> list[str]:
    """Problems of one expression: unknown metrics, labels its metric does not carry, and
    grouping/matching labels no operand carries. Empty when the rule can fire on real series."""
    problems: list[str] = []
    _walk(pp.parse(expr), labels_of, problems)
    return problems


def _kind(value: Any) -> str:
    return str(value).split(".")[-1]


def _walk(e: Any, labels_of: Inventory, problems: list[str]) -> frozenset[str] | None:
    """The labels e's result may carry (None for scalars and strings)."""
    if isinstance(e, pp.ParenExpr):
        return _walk(e.expr, labels_of, problems)
    if isinstance(e, (pp.NumberLiteral, pp.StringLiteral)):
        return None
    if isinstance(e, pp.MatrixSelector):
        return _selector(e.vector_selector, labels_of, problems)
    if isinstance(e, pp.VectorSelector):
        return _selector(e, labels_of, problems)
    if isinstance(e, pp.SubqueryExpr):
        return _walk(e.expr, labels_of, problems)
    if isinstance(e, pp.UnaryExpr):
        return _walk(e.expr, labels_of, problems)
    if isinstance(e, pp.Call):
        return _call(e, labels_of, problems)
    if isinstance(e, pp.AggregateExpr):
        inner = _walk(e.expr, labels_of, problems)
        if e.param is not None:
            _walk(e.param, labels_of, problems)
        if e.modifier is None:
            return frozenset()
        listed = frozenset(e.modifier.labels)
        if _kind(e.modifier.type) == "Without":
            return (inner or frozenset()) - listed
        _require(listed, inner, f"{e.op} by", problems)
        return listed
    if isinstance(e, pp.BinaryExpr):
        lhs = _walk(e.lhs, labels_of, problems)
        rhs = _walk(e.rhs, labels_of, problems)
        m = e.modifier
        if m is not None and m.matching is not None and _kind(m.matching.type) == "Include":
            on = frozenset(m.matching.labels)
            _require(on, lhs, "on", problems)
            _require(on, rhs, "on", problems)
        if lhs is None:
            return rhs
        extra = frozenset(m.group_labels or []) if m is not None else frozenset()
        if extra:
            _require(extra, rhs, "group_left", problems)
        return lhs | extra
    problems.append(f"unsupported expression {e}")
    return None


def _selector(e: Any, labels_of: Inventory, problems: list[str]) -> frozenset[str] | None:
    name = e.name
    if not name:
        problems.append(f"selector without a metric name: {e}")
        return frozenset()
    known = labels_of(name)
    if known is None:
        problems.append(f"no exporter produces {name}")
        return frozenset()
    for matcher in e.matchers.matchers:
        if matcher.name not in known and matcher.name != "__name__":
            problems.append(f"{name} has no label {matcher.name}")
    return known


def _call(e: Any, labels_of: Inventory, problems: list[str]) -> frozenset[str] | None:
    args = [_walk(a, labels_of, problems) for a in e.args]
    name = e.func.name
    if name == "label_replace":
        source = e.args[3].val
        if source:
            _require(frozenset({source}), args[0], "label_replace source", problems)
        return (args[0] or frozenset()) | {e.args[1].val}
    if name == "histogram_quantile":
        _require(frozenset({"le"}), args[1], "histogram_quantile", problems)
        return (args[1] or frozenset()) - {"le"}
    vectors = [a for a in args if a is not None]
    return vectors[0] if vectors else None


def _require(wanted: frozenset[str], have: frozenset[str] | None, where: str, problems: list[str]) -> None:
    if have is None:
        return
    for label in sorted(wanted - have):
        problems.append(f"{where} ({label}) names a label its operand does not carry")
