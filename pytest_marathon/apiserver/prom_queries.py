"""The query and metadata endpoints of the Prometheus HTTP API over the twin's series store.

Every number comes from the project's own `PromQLEngine`, so a client sees exactly what the
alert rules and the agents' `query_metrics` tool see. Parameters are checked in the order and
with the messages of upstream prometheus/prometheus web/api/v1/api.go (`query`, `queryRange`,
`series`, `labelNames`, `labelValues`, `parseMatchersParam`): what cannot be parsed is
`bad_data` (HTTP 400), a query that fails while it runs is `execution` (422), one that outlives
its `timeout` is `timeout` (503; checked when the evaluation returns, since a Python evaluation
cannot be interrupted).

A time after the twin's `now` is answered as Prometheus answers a time it has no data for yet:
from the samples that exist (the newest within the lookback window, or nothing); the engine is
renewed whenever the twin moves on, so nothing cached for such a time outlives the twin
reaching it.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import promql_parser as pp

from pytest_marathon.alerting import PromQLEngine, PromQLError
from pytest_marathon.apiserver.prom_format import (
    MAX_TIME,
    MIN_TIME,
    ApiError,
    invalid_param,
    parse_duration,
    parse_time,
    sample_value,
    timestamp,
)
from pytest_marathon.backends.base import Backend
from pytest_marathon.tsdb import Series, is_stale

Params = Mapping[str, Sequence[str]]
MAX_POINTS = 11000  # web/api/v1/api.go queryRange: points per series


def _one(params: Params, name: str) -> str:
    """Go's FormValue: the first value of a parameter, "" when absent."""
    values = params.get(name) or [""]
    return values[0]


class PromQueries:
    """Answers the query and metadata endpoints for one backend (the caller holds its lock)."""

    def __init__(self, backend: Backend) -> None:
        if backend.store is None:
            raise ValueError("the Prometheus API needs a backend with a series store")
        self._backend = backend
        self._store = backend.store
        self._shared: PromQLEngine | None = None
        self._engine_now: float | None = None

    @property
    def now(self) -> float:
        return float(self._backend.now)

    def _engine(self) -> PromQLEngine:
        """The shared engine, renewed whenever the twin moved on: it caches answers per
        evaluation time, and an answer for a time the twin had not reached (or had just
        reached) must not outlive the samples that arrive after it."""
        now = self.now
        if self._shared is None or self._engine_now != now:
            self._shared = PromQLEngine(self._store)
            self._engine_now = now
        return self._shared

    # /api/v1/query ----------------------------------------------------------------------------
    def query(self, params: Params) -> dict[str, Any]:
        t = _time_param(params, "time", self.now)
        deadline = _deadline(params)
        query = _one(params, "query")
        engine = self._engine()
        node = _compile(engine, query)
        result = _run(lambda: engine.instant(query, t), deadline)
        if node.kind == "scalar":
            return {"resultType": "scalar", "result": [timestamp(t), sample_value(float(result))]}
        if node.kind == "string":
            return {"resultType": "string", "result": [timestamp(t), str(result)]}
        if node.kind == "matrix":  # a range vector holds no staleness markers (as upstream)
            return {"resultType": "matrix", "result": [_points(e, drop_stale=True) for e in result]}
        return {
            "resultType": "vector",
            "result": [
                {"metric": _metric(e["labels"]), "value": [timestamp(t), sample_value(e["value"])]}
                for e in result
            ],
        }

    # /api/v1/query_range ----------------------------------------------------------------------
    def query_range(self, params: Params) -> dict[str, Any]:
        start = _time_param(params, "start", None)
        end = _time_param(params, "end", None)
        if end < start:
            raise invalid_param("end", "end timestamp must not be before start time")
        try:
            step = parse_duration(_one(params, "step"))
        except ValueError as problem:
            raise invalid_param("step", str(problem)) from None
        if step <= 0:
            raise invalid_param(
                "step",
                "zero or negative query resolution step widths are not accepted. "
                "Try a positive integer",
            )
        if (end - start) // step > MAX_POINTS:
            raise ApiError(
                "bad_data",
                "exceeded maximum resolution of 11,000 points per timeseries. "
                "Try decreasing the query resolution (?step=XX)",
            )
        deadline = _deadline(params)
        query = _one(params, "query")
        engine = self._engine()
        node = _compile(engine, query)
        if node.kind not in ("vector", "scalar"):
            kind = "range vector" if node.kind == "matrix" else node.kind
            raise invalid_param(
                "query",
                f'invalid expression type "{kind}" for range query, must be Scalar or instant Vector',
            )
        result = _run(lambda: engine.range(query, start, end, step), deadline)
        return {"resultType": "matrix", "result": [_points(e) for e in result]}

    # /api/v1/series, /api/v1/labels, /api/v1/label/<name>/values ----------------------------
    def series(self, params: Params) -> list[dict[str, str]]:
        if not params.get("match[]"):
            raise ApiError("bad_data", "no match[] parameter provided")
        start = _time_param(params, "start", MIN_TIME)
        end = _time_param(params, "end", MAX_TIME)
        try:
            selectors = [_Selector(text) for text in params["match[]"]]
        except ValueError as problem:
            raise invalid_param("match[]", str(problem)) from None
        return [_metric(s.key) for s in self._matching(selectors, start, end)]

    def label_names(self, params: Params) -> list[str]:
        start = _time_param(params, "start", MIN_TIME)
        end = _time_param(params, "end", MAX_TIME)
        selectors = self._optional_selectors(params)
        return sorted({name for s in self._matching(selectors, start, end) for name, _ in s.key})

    def label_values(self, name: str, params: Params) -> list[str]:
        if not name:
            raise ApiError("bad_data", f'invalid label name: "{name}"')
        start = _time_param(params, "start", MIN_TIME)
        end = _time_param(params, "end", MAX_TIME)
        selectors = self._optional_selectors(params)
        values = {dict(s.key).get(name, "") for s in self._matching(selectors, start, end)}
        values.discard("")
        return sorted(values)

    def _optional_selectors(self, params: Params) -> list[_Selector]:
        try:
            return [_Selector(text) for text in params.get("match[]", ())]
        except ValueError as problem:
            raise ApiError("bad_data", str(problem)) from None

    def _matching(self, selectors: list[_Selector], start: float, end: float) -> list[Series]:
        """Series with a sample in [start, end] matched by any selector (all without one),
        sorted by labels as Prometheus' series sets are."""
        found = [
            s for s in self._store
            if _has_sample(s, start, end) and (not selectors or any(m.matches(s) for m in selectors))
        ]
        return sorted(found, key=lambda s: s.key)


_EMPTY_MATCHERS = "match[] must contain at least one non-empty matcher"


class _Selector:
    """A `match[]` series selector (web/api/v1/api.go parseMatchersParam)."""

    _OPS = {"Equal": "=", "NotEqual": "!=", "Re": "=~", "NotRe": "!~"}

    def __init__(self, text: str) -> None:
        try:
            parsed = pp.parse(text)
        except ValueError as problem:
            if "at least one non-empty matcher" in str(problem):  # the parser checks it first
                raise ValueError(_EMPTY_MATCHERS) from None
            raise ValueError(f"1:1: parse error: {problem}") from None
        if not isinstance(parsed, pp.VectorSelector):
            raise ValueError(f"1:1: parse error: expected a series selector, got {text!r}")
        if parsed.matchers.or_matchers:
            raise ValueError("`or` inside a series selector is not supported by the twin")
        self.matchers: list[tuple[str, str, str, re.Pattern[str] | None]] = []
        if parsed.name:
            self.matchers.append(("=", "__name__", parsed.name, None))
        for m in parsed.matchers.matchers:
            op = self._OPS[str(m.op).split(".")[-1]]
            pattern = re.compile(m.value) if op in ("=~", "!~") else None
            self.matchers.append((op, m.name, m.value, pattern))
        if all(_match(m, "") for m in self.matchers):
            raise ValueError(_EMPTY_MATCHERS)

    def matches(self, series: Series) -> bool:
        labels = dict(series.key)
        return all(_match(m, labels.get(m[1], "")) for m in self.matchers)


def _match(matcher: tuple[str, str, str, re.Pattern[str] | None], actual: str) -> bool:
    op, _, value, pattern = matcher
    if op == "=":
        return actual == value
    if op == "!=":
        return actual != value
    assert pattern is not None
    hit = pattern.fullmatch(actual) is not None
    return hit if op == "=~" else not hit


def _has_sample(series: Series, start: float, end: float) -> bool:
    times = series.times
    i = bisect_left(times, start) if start != MIN_TIME else 0
    return i < len(times) and times[i] <= end


def _time_param(params: Params, name: str, default: float | None) -> float:
    text = _one(params, name)
    if text == "" and default is not None:
        return default
    try:
        return parse_time(text)
    except ValueError as problem:
        if default is not None:  # parseTimeParam wraps what parseTime says
            raise invalid_param(name, f"invalid time value for '{name}': {problem}") from None
        raise invalid_param(name, str(problem)) from None


def _deadline(params: Params) -> float | None:
    text = _one(params, "timeout")
    if text == "":
        return None
    try:
        return time.monotonic() + parse_duration(text)
    except ValueError as problem:
        raise invalid_param("timeout", str(problem)) from None


def _compile(engine: PromQLEngine, query: str) -> Any:
    """Parse errors and constructs the evaluator refuses are the client's: bad_data."""
    if not query.strip():
        raise invalid_param("query", "1:1: parse error: no expression found in input")
    try:
        return engine.compile(query)
    except PromQLError as problem:
        raise invalid_param("query", str(problem)) from None


def _run(evaluate: Callable[[], Any], deadline: float | None) -> Any:
    try:
        result = evaluate()
    except PromQLError as problem:
        raise ApiError("execution", str(problem)) from None
    if deadline is not None and time.monotonic() > deadline:
        raise ApiError("timeout", "query timed out in expression evaluation")
    return result


def _metric(labels: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in dict(labels).items()}


def _points(entry: Mapping[str, Any], drop_stale: bool = False) -> dict[str, Any]:
    return {
        "metric": _metric(entry["labels"]),
        "values": [
            [timestamp(t), sample_value(v)]
            for t, v in entry["values"]
            if not (drop_stale and is_stale(v))
        ],
    }
