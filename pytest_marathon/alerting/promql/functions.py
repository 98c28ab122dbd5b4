"""Functions of instant vectors and scalars: math, rounding and clamping, sorting, timestamp,
label_replace/label_join, absent/absent_over_time, scalar(), vector() and time().

Math functions map Python's exceptions back to the Inf/NaN Go returns, and label_replace expands
`$1`/`${name}` references the way Go's regexp does, so rules written for Prometheus behave the
same here. `absent` derives its output labels from the selector's equality matchers, as
Prometheus does, so an absence alert names what is missing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from pytest_marathon.alerting.promql.nodes import _Context, _Node
from pytest_marathon.alerting.promql.selectors import _MatrixSelector, _VectorSelector
from pytest_marathon.alerting.promql.values import (
    NAME,
    Labels,
    PromQLError,
    Vector,
    _with,
    drop_name,
)
from pytest_marathon.tsdb import is_stale

_MATH_FUNCTIONS: dict[str, Callable[[float], float]] = {
    "abs": abs,
    "ceil": lambda v: float(math.ceil(v)) if math.isfinite(v) else v,
    "floor": lambda v: float(math.floor(v)) if math.isfinite(v) else v,
    "exp": lambda v: _safe(math.exp, v),
    "ln": lambda v: _safe(math.log, v),
    "log2": lambda v: _safe(math.log2, v),
    "log10": lambda v: _safe(math.log10, v),
    "sqrt": lambda v: _safe(math.sqrt, v),
    "sgn": lambda v: math.copysign(1.0, v) if v != 0 and v == v else v,
}


def _safe(fn: Callable[[float], float], v: float) -> float:
    try:
        return fn(v)
    except OverflowError:
        return math.inf
    except ValueError:
        if v == 0:
            return -math.inf
        return math.nan


class _VectorFunction(_Node):
    def __init__(self, name: str, args: list[_Node], text: str):
        self.name = name
        self.args = args
        self.key = f"fn:{text}"

    def _evaluate(self, ctx: _Context) -> Vector:
        name = self.name
        vector: Vector = self.args[0].evaluate(ctx)
        params = [a.evaluate(ctx) for a in self.args[1:]]
        if name in _MATH_FUNCTIONS:
            fn = _MATH_FUNCTIONS[name]
            return [(drop_name(labels), fn(v)) for labels, v in vector]
        if name == "round":
            to = params[0] if params else 1.0
            return [(drop_name(labels), _round(v, to)) for labels, v in vector]
        if name in ("clamp", "clamp_min", "clamp_max"):
            low = params[0] if name in ("clamp", "clamp_min") else -math.inf
            high = params[-1] if name in ("clamp", "clamp_max") else math.inf
            if name == "clamp" and high < low:
                return []
            return [(drop_name(labels), max(low, min(high, v))) for labels, v in vector]
        if name == "sort":
            return sorted(vector, key=lambda s: (math.isnan(s[1]), s[1]))
        if name == "sort_desc":
            return sorted(vector, key=lambda s: (math.isnan(s[1]), -s[1]))
        if name == "timestamp":
            return self._timestamps(ctx, vector)
        if name == "label_replace":
            return _label_replace(vector, *params)
        if name == "label_join":
            return _label_join(vector, params[0], params[1], params[2:])
        if name == "histogram_quantile":  # pragma: no cover - compiled separately
            raise PromQLError("histogram_quantile takes a scalar first")
        raise PromQLError(f"function {name}() is not supported")  # pragma: no cover

    def _timestamps(self, ctx: _Context, vector: Vector) -> Vector:
        arg = self.args[0]
        if not isinstance(arg, _VectorSelector):
            return [(drop_name(labels), ctx.t) for labels, _ in vector]
        t = ctx.t - arg.offset
        out: Vector = []
        for labels, _, series, _ in arg.series(ctx.engine):
            hit = series.at(t)
            if hit is not None and not is_stale(hit[1]):
                out.append((drop_name(labels), hit[0]))
        return out


def _round(v: float, to: float) -> float:
    if not math.isfinite(v):
        return v
    return math.floor(v * (1.0 / to) + 0.5) / (1.0 / to)


_GO_GROUP = re.compile(r"\$(\$|\{(\w+)\}|(\w+))")


def _expand(template: str, match: re.Match[str]) -> str:
    def substitute(m: re.Match[str]) -> str:
        if m.group(1) == "$":
            return "$"
        ref = m.group(2) or m.group(3)
        try:
            group = match.group(int(ref)) if ref.isdigit() else match.group(ref)
        except IndexError:
            return ""
        return group or ""

    return _GO_GROUP.sub(substitute, template)


def _label_replace(vector: Vector, dst: str, replacement: str, src: str, regex: str) -> Vector:
    try:
        pattern = re.compile(regex)
    except re.error as exc:
        raise PromQLError(f"invalid regular expression in label_replace(): {regex!r}") from exc
    out: Vector = []
    for labels, v in vector:
        match = pattern.fullmatch(dict(labels).get(src, ""))
        if match is not None:
            labels = _with(labels, dst, _expand(replacement, match))
        out.append((labels, v))
    return out


def _label_join(vector: Vector, dst: str, sep: str, sources: list[str]) -> Vector:
    out: Vector = []
    for labels, v in vector:
        items = dict(labels)
        out.append((_with(labels, dst, sep.join(items.get(s, "") for s in sources)), v))
    return out


class _Absent(_Node):
    def __init__(self, arg: _Node, text: str):
        self.arg = arg
        self.key = f"fn:{text}"

    def _evaluate(self, ctx: _Context) -> Vector:
        if self.arg.evaluate(ctx):
            return []
        return [(_absent_labels(self.arg), 1.0)]


class _AbsentOverTime(_Node):
    def __init__(self, matrix: _MatrixSelector, text: str):
        self.matrix = matrix
        self.key = f"fn:{text}"

    def _evaluate(self, ctx: _Context) -> Vector:
        if self.matrix.evaluate(ctx):
            return []
        return [(_absent_labels(self.matrix.selector), 1.0)]


def _absent_labels(node: _Node) -> Labels:
    if not isinstance(node, _VectorSelector):
        return ()
    equal: dict[str, str] = {}
    repeated: set[str] = set()
    for m in node.matchers:
        if m.name == NAME:
            continue
        if m.op == "=" and m.name not in equal and m.name not in repeated:
            equal[m.name] = m.value
        elif m.name in equal:
            del equal[m.name]
            repeated.add(m.name)
    return tuple(sorted(equal.items()))


class _ScalarOf(_Node):
    kind = "scalar"

    def __init__(self, arg: _Node, text: str):
        self.arg = arg
        self.key = f"fn:{text}"

    def _evaluate(self, ctx: _Context) -> float:
        vector = self.arg.evaluate(ctx)
        return vector[0][1] if len(vector) == 1 else math.nan


class _VectorOf(_Node):
    def __init__(self, arg: _Node, text: str):
        self.arg = arg
        self.key = f"fn:{text}"

    def _evaluate(self, ctx: _Context) -> Vector:
        return [((), float(self.arg.evaluate(ctx)))]


class _Time(_Node):
    kind = "scalar"
    key = "fn:time()"

    def evaluate(self, ctx: _Context) -> float:
        return ctx.t
