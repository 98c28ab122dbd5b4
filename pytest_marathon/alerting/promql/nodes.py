"""The base of the compiled expression tree, and the cache of one evaluation time.

Each node has a canonical text key; within one evaluation time every node's result is cached by
that key, so the 44 rules of a pack share their common selectors and `rate(...)`
sub-expressions. Literals are nodes too, so every operand is evaluated the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_marathon.alerting.promql.engine import PromQLEngine


@dataclass
class _Context:
    engine: PromQLEngine
    t: float
    cache: dict[str, Any]


class _Node:
    """A compiled expression. `kind` is the PromQL value type it returns."""

    kind = "vector"
    key = ""

    def evaluate(self, ctx: _Context) -> Any:
        cached = ctx.cache.get(self.key)
        if cached is None:
            cached = self._evaluate(ctx)
            ctx.cache[self.key] = cached
        return cached

    def _evaluate(self, ctx: _Context) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class _Number(_Node):
    kind = "scalar"

    def __init__(self, value: float) -> None:
        self.value = value
        self.key = f"num:{value!r}"

    def evaluate(self, ctx: _Context) -> float:
        return self.value


class _String(_Node):
    kind = "string"

    def __init__(self, value: str) -> None:
        self.value = value
        self.key = f"str:{value!r}"

    def evaluate(self, ctx: _Context) -> str:
        return self.value
