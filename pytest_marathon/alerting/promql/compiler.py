"""Queries to node trees: parse once with `promql_parser`, then translate its AST node by node.

The compiler is where unsupported PromQL is refused: subqueries, `@`, `or` inside matchers,
fill values and unknown functions or operators raise a `PromQLError` naming the construct rather
than evaluating to a plausible wrong answer. Type errors Prometheus rejects (e.g. a comparison
of scalars without `bool`) are refused here too, before anything is evaluated.
"""

from __future__ import annotations

from typing import Any

import promql_parser as pp

from pytest_marathon.alerting.promql.aggregations import _Aggregate
from pytest_marathon.alerting.promql.binary import _Binary, _Negate
from pytest_marathon.alerting.promql.functions import (
    _MATH_FUNCTIONS,
    _Absent,
    _AbsentOverTime,
    _ScalarOf,
    _Time,
    _VectorFunction,
    _VectorOf,
)
from pytest_marathon.alerting.promql.histogram import _HistogramQuantile
from pytest_marathon.alerting.promql.nodes import _Node, _Number, _String
from pytest_marathon.alerting.promql.range_functions import _OVER_TIME, _RangeFunction
from pytest_marathon.alerting.promql.selectors import (
    _compile_matcher,
    _MatrixSelector,
    _VectorSelector,
)
from pytest_marathon.alerting.promql.values import _ARITHMETIC, _COMPARISON, _SET_OPS, PromQLError

_RANGE_FUNCTIONS = {
    "rate", "irate", "increase", "delta", "idelta", "deriv", "predict_linear", "changes",
    "resets", "quantile_over_time", *_OVER_TIME,
}
_VECTOR_FUNCTIONS = {
    *_MATH_FUNCTIONS, "round", "clamp", "clamp_min", "clamp_max", "sort", "sort_desc",
    "timestamp", "label_replace", "label_join",
}
_AGGREGATIONS = {
    "sum", "avg", "min", "max", "count", "group", "stddev", "stdvar", "topk", "bottomk",
    "quantile", "count_values",
}
SUPPORTED_FUNCTIONS = frozenset(
    _RANGE_FUNCTIONS | _VECTOR_FUNCTIONS
    | {"histogram_quantile", "absent", "absent_over_time", "scalar", "vector", "time"}
)


def _seconds(delta: Any) -> float:
    return 0.0 if delta is None else delta.total_seconds()


def _enum_name(value: Any) -> str:
    return str(value).split(".")[-1]


def compile_query(text: str) -> _Node:
    """Parse and compile a query; raises `PromQLError` for syntax errors and unsupported
    constructs (naming them)."""
    if not isinstance(text, str) or not text.strip():
        raise PromQLError("empty query")
    try:
        ast = pp.parse(text)
    except (ValueError, TypeError) as exc:
        raise PromQLError(f"parse error: {exc}") from exc
    return _compile(ast)


def _compile(e: Any) -> _Node:
    if isinstance(e, pp.ParenExpr):
        return _compile(e.expr)
    if isinstance(e, pp.NumberLiteral):
        return _Number(float(e.val))
    if isinstance(e, pp.StringLiteral):
        return _String(e.val)
    if isinstance(e, pp.VectorSelector):
        return _compile_selector(e)
    if isinstance(e, pp.MatrixSelector):
        return _MatrixSelector(_compile_selector(e.vector_selector), _seconds(e.range), str(e))
    if isinstance(e, pp.SubqueryExpr):
        raise PromQLError(f"subqueries are not supported: {e}")
    if isinstance(e, pp.UnaryExpr):
        inner = _compile(e.expr)
        _require(inner, ("scalar", "vector"), "unary minus")
        return _Negate(inner, str(e))
    if isinstance(e, pp.Call):
        return _compile_call(e)
    if isinstance(e, pp.AggregateExpr):
        return _compile_aggregate(e)
    if isinstance(e, pp.BinaryExpr):
        return _compile_binary(e)
    raise PromQLError(f"unsupported expression: {e}")  # pragma: no cover


def _compile_selector(e: Any) -> _VectorSelector:
    if e.at is not None:
        raise PromQLError(f"the @ modifier is not supported: {e}")
    if e.matchers.or_matchers:
        raise PromQLError(f"'or' inside label matchers is not supported: {e}")
    matchers = [_compile_matcher(m) for m in e.matchers.matchers]
    return _VectorSelector(e.name, matchers, _seconds(e.offset), str(e))


def _require(node: _Node, kinds: tuple[str, ...], where: str) -> None:
    if node.kind not in kinds:
        raise PromQLError(f"{where} expects {' or '.join(kinds)}, got {node.kind}")


def _compile_call(e: Any) -> _Node:
    name = e.func.name
    text = str(e)
    args = [_compile(a) for a in e.args]
    if name not in SUPPORTED_FUNCTIONS:
        raise PromQLError(f"function {name}() is not supported")
    if name in _RANGE_FUNCTIONS:
        matrix = args[0] if name != "quantile_over_time" else args[1]
        if not isinstance(matrix, _MatrixSelector):
            raise PromQLError(f"{name}() needs a range selector argument (subqueries unsupported)")
        params = args[:1] if name == "quantile_over_time" else args[1:]
        return _RangeFunction(name, matrix, params, text)
    if name == "absent_over_time":
        if not isinstance(args[0], _MatrixSelector):
            raise PromQLError("absent_over_time() needs a range selector argument")
        return _AbsentOverTime(args[0], text)
    if name == "histogram_quantile":
        return _HistogramQuantile(args[0], args[1], text)
    if name == "absent":
        return _Absent(args[0], text)
    if name == "scalar":
        return _ScalarOf(args[0], text)
    if name == "vector":
        return _VectorOf(args[0], text)
    if name == "time":
        return _Time()
    return _VectorFunction(name, args, text)


def _compile_aggregate(e: Any) -> _Node:
    op = str(e.op)
    if op not in _AGGREGATIONS:
        raise PromQLError(f"aggregation {op}() is not supported")
    expr = _compile(e.expr)
    _require(expr, ("vector",), f"{op}()")
    param = _compile(e.param) if e.param is not None else None
    labels: list[str] | None = None
    without = False
    if e.modifier is not None:
        labels = list(e.modifier.labels)
        without = _enum_name(e.modifier.type) == "Without"
    return _Aggregate(op, expr, param, labels, without, str(e))


_CARD = {
    "OneToOne": "one_to_one",
    "ManyToOne": "many_to_one",
    "OneToMany": "one_to_many",
    "ManyToMany": "many_to_many",
}


def _compile_binary(e: Any) -> _Node:
    op = str(e.op)
    if op not in _ARITHMETIC and op not in _COMPARISON and op not in _SET_OPS:
        raise PromQLError(f"binary operator {op} is not supported")
    lhs, rhs = _compile(e.lhs), _compile(e.rhs)
    for side in (lhs, rhs):
        _require(side, ("scalar", "vector"), f"operator {op}")
    m = e.modifier
    return_bool = bool(m is not None and m.return_bool)
    if op in _COMPARISON and lhs.kind == rhs.kind == "scalar" and not return_bool:
        raise PromQLError(f"comparisons between scalars must use bool: {e}")
    card = "many_to_many" if op in _SET_OPS else "one_to_one"
    on = False
    matching: list[str] = []
    include: list[str] = []
    if m is not None:
        if m.card is not None and op not in _SET_OPS:
            card = _CARD[_enum_name(m.card)]
        if m.matching is not None:
            on = _enum_name(m.matching.type) == "Include"
            matching = list(m.matching.labels)
        include = list(m.group_labels or [])
        fill = getattr(m, "fill_values", None)
        if fill is not None and (fill.lhs is not None or fill.rhs is not None):
            raise PromQLError(f"fill values in vector matching are not supported: {e}")
    return _Binary(op, lhs, rhs, return_bool, card, on, matching, include, str(e))
