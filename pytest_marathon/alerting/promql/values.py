"""The value types every node passes around, and the float arithmetic they share.

Samples are (labels, value) pairs with labels as sorted tuples, so label sets hash and compare
cheaply and results sort the way Prometheus' series sets do. Python raises where Go returns
Inf/NaN (division by zero, overflow, a negative base to a fractional power), so the operators
here reproduce Go/IEEE semantics: a query must give the number Prometheus gives, never an
exception.
"""

from __future__ import annotations

import math
from collections.abc import Callable

Labels = tuple[tuple[str, str], ...]
Sample = tuple[Labels, float]
Vector = list[Sample]


NAME = "__name__"


class PromQLError(ValueError):
    """A query this evaluator cannot run: bad syntax, unsupported construct, or a runtime
    error Prometheus would also raise (e.g. many-to-many matching)."""


# ------------------------------------------------------------------------------------------
# label helpers


class ByIdentity:
    """A function of label tuples remembered per tuple object.

    Selectors and aggregations hand out the same label tuples at every evaluation, and hashing
    a tuple of label pairs (which Python never caches) is what a dict keyed by labels costs, so
    results are found by the tuple's identity; an entry holds its tuple, so the id cannot be
    reused while the entry lives. Tuples made afresh at every evaluation only cost a miss, and
    the table starts over once it holds `cap` of them."""

    __slots__ = ("fn", "table", "cap")

    def __init__(self, fn: Callable[[Labels], Labels], cap: int = 65536) -> None:
        self.fn = fn
        self.table: dict[int, tuple[Labels, Labels]] = {}
        self.cap = cap

    def __call__(self, labels: Labels) -> Labels:
        hit = self.table.get(id(labels))
        if hit is not None and hit[0] is labels:
            return hit[1]
        if len(self.table) >= self.cap:
            self.table.clear()
        value = self.fn(labels)
        self.table[id(labels)] = (labels, value)
        return value


def drop_name(labels: Labels) -> Labels:
    if labels and any(k == NAME for k, _ in labels):
        return tuple(kv for kv in labels if kv[0] != NAME)
    return labels


def _keep(labels: Labels, names: frozenset[str]) -> Labels:
    return tuple(kv for kv in labels if kv[0] in names)


def _drop(labels: Labels, names: frozenset[str]) -> Labels:
    return tuple(kv for kv in labels if kv[0] not in names)


def _with(labels: Labels, name: str, value: str) -> Labels:
    items = dict(labels)
    if value == "":
        items.pop(name, None)
    else:
        items[name] = value
    return tuple(sorted(items.items()))


def _format_labels(labels: Labels) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in labels) + "}"


# ------------------------------------------------------------------------------------------
# float arithmetic with Go/IEEE semantics (Python raises where Go returns Inf/NaN)


def _div(a: float, b: float) -> float:
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _mod(a: float, b: float) -> float:
    if b == 0.0 or math.isinf(a) or math.isnan(a) or math.isnan(b):
        return math.nan
    return math.fmod(a, b)


def _pow(a: float, b: float) -> float:
    try:
        return math.pow(a, b)
    except OverflowError:
        return math.inf
    except ValueError:
        if a == 0.0 and b < 0:
            return math.inf
        return math.nan


_ARITHMETIC: dict[str, Callable[[float, float], float]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _div,
    "%": _mod,
    "^": _pow,
    "atan2": math.atan2,
}
_COMPARISON: dict[str, Callable[[float, float], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
}
_SET_OPS = ("and", "or", "unless")
