"""`PromQLEngine`: instant and range queries over a `SeriesStore`.

The same engine answers alert rules and the agents' `query_metrics` tool. It owns the state that
outlives one evaluation: compiled queries (each query text is parsed once), each selector's
incrementally grown series index, the running state of every series' range windows, and the
sub-expression cache of the current evaluation time, which the alert engine shares across all
the rules it evaluates at one time.
"""

from __future__ import annotations

import math
from bisect import insort
from operator import itemgetter
from typing import Any

from pytest_marathon.alerting.promql.compiler import compile_query
from pytest_marathon.alerting.promql.nodes import _Context, _Node
from pytest_marathon.alerting.promql.selectors import _SelectorIndex, _VectorSelector
from pytest_marathon.alerting.promql.values import Labels, PromQLError, Vector, drop_name
from pytest_marathon.alerting.promql.windows import _SeriesAux
from pytest_marathon.tsdb import Series, SeriesStore

_first = itemgetter(0)


class PromQLEngine:
    """Instant and range queries over a `SeriesStore`.

    `share_cache(t)` lets the alert engine evaluate many rules at one time with one cache.
    """

    def __init__(self, store: SeriesStore) -> None:
        self.store = store
        self._compiled: dict[str, _Node] = {}
        self._selectors: dict[str, _SelectorIndex] = {}
        self._aux_state: dict[int, _SeriesAux] = {}
        self._cache_t: float | None = None
        self._cache: dict[str, Any] = {}

    # public API ---------------------------------------------------------------------------
    def compile(self, query: str) -> _Node:
        node = self._compiled.get(query)
        if node is None:
            node = compile_query(query)
            self._compiled[query] = node
        return node

    def instant(self, query: str, t: float) -> list[dict[str, Any]] | float | str:
        """Evaluate at t: a list of {"labels", "value"} for a vector, a float for a scalar."""
        node = self.compile(query)
        if node.kind == "matrix":
            return [
                {
                    "labels": dict(series.key),
                    "values": [
                        [ts, v] for ts, v in zip(series.times[lo:hi], series.values[lo:hi])
                    ],
                }
                for _, series, lo, hi, _ in self.evaluate_node(node, t)
            ]
        result = self.evaluate_node(node, t)
        if node.kind != "vector":
            return result
        return [{"labels": dict(labels), "value": v} for labels, v in sorted(result)]

    def range(
        self, query: str, start: float, end: float, step: float
    ) -> list[dict[str, Any]]:
        """Evaluate at start, start+step, …, end; one entry per label set with its points."""
        if step <= 0:
            raise PromQLError("range query step must be positive")
        if end < start:
            raise PromQLError("range query end is before start")
        if (end - start) / step > 11000:
            raise PromQLError("range query exceeds 11000 points; raise the step")
        node = self.compile(query)
        if node.kind not in ("vector", "scalar"):
            raise PromQLError(f"range queries need a vector or scalar expression, got {node.kind}")
        points: dict[Labels, list[list[float]]] = {}
        n = int(math.floor((end - start) / step + 1e-9))
        for i in range(n + 1):
            t = start + i * step
            result = self.evaluate_node(node, t)
            if node.kind == "scalar":
                points.setdefault((), []).append([t, result])
                continue
            for labels, v in result:
                points.setdefault(labels, []).append([t, v])
        return [{"labels": dict(labels), "values": values} for labels, values in sorted(points.items())]

    def evaluate_node(self, node: _Node, t: float) -> Any:
        """Evaluate a compiled node, sharing the sub-expression cache of time t."""
        if self._cache_t != t:
            self._cache_t = t
            self._cache = {}
        return node.evaluate(_Context(self, t, self._cache))

    def vector(self, query: str, t: float) -> Vector:
        """Raw (labels, value) pairs of a vector query (labels as sorted tuples)."""
        node = self.compile(query)
        if node.kind != "vector":
            raise PromQLError(f"expected a vector expression, got {node.kind}: {query}")
        return self.evaluate_node(node, t)

    # internals used by nodes ---------------------------------------------------------------
    def _select(self, selector: _VectorSelector) -> list[tuple[Labels, Labels, Series, _SeriesAux]]:
        index = self._selectors.get(selector.select_key)
        if index is None:
            index = _SelectorIndex()
            self._selectors[selector.select_key] = index
        if selector.name is not None:
            candidates = self.store.series(selector.name)
            if len(candidates) == index.seen:
                return index.matched
            new = candidates[index.seen :]
            index.seen = len(candidates)
        else:
            everything = list(self.store)
            if len(everything) == index.seen:
                return index.matched
            new = everything[index.seen :]
            index.seen = len(everything)
        found = []
        for series in new:
            labels = dict(series.key)
            if all(m.matches(labels) for m in selector.matchers):
                found.append((series.key, drop_name(series.key), series, self._aux(series)))
        matched = index.matched
        if len(found) * 8 < len(matched):
            # a few new series into a long sorted list: insert each (series keys are distinct,
            # so the order is the one sorting would give)
            for item in found:
                insort(matched, item, key=_first)
        elif found:
            matched.extend(found)
            matched.sort(key=_first)
        return matched

    def _aux(self, series: Series) -> _SeriesAux:
        """The shared running counts of a series (refreshed by range selectors as it grows);
        keyed by identity, since the store never drops a series."""
        aux = self._aux_state.get(id(series))
        if aux is None:
            aux = _SeriesAux()
            self._aux_state[id(series)] = aux
        return aux
