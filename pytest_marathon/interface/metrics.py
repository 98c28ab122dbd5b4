"""`query_metrics`: PromQL on the backend's metrics, bounded and in Prometheus' answer shape.

On the twin the evaluator is the alert engine's own `PromQLEngine` over the series store, so an
agent sees exactly the numbers the rules saw; on a cluster a Prometheus client is passed in as
`promql`. Results are capped (series, points) and say what was cut.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from pytest_marathon.backends.base import Backend
from pytest_marathon.interface.shaping import finite
from pytest_marathon.interface.verdicts import BadArguments

MAX_POINTS = 240
DEFAULT_STEP_S = 60.0


class PromQL(Protocol):
    """The evaluator `query_metrics` needs (see `pytest_marathon.alerting.PromQLEngine`)."""

    def instant(self, query: str, t: float) -> Any: ...

    def range(self, query: str, start: float, end: float, step: float) -> Any: ...


class MetricsReader:
    def __init__(self, backend: Backend, promql: PromQL | None) -> None:
        self._backend = backend
        self._promql = promql

    def _engine(self) -> PromQL:
        if self._promql is None:
            if self._backend.store is None:
                raise BadArguments("no metrics store is available on this backend")
            from pytest_marathon.alerting import PromQLEngine

            self._promql = PromQLEngine(self._backend.store)
        return self._promql

    def query(self, args: Mapping[str, Any], now: float) -> dict[str, Any]:
        query = args["query"]
        cap = args.get("max_series", 30)
        engine = self._engine()
        if "start" in args:
            start = args["start"]
            end = args.get("end", now)
            step = float(args.get("step", DEFAULT_STEP_S))
            if end < start:
                raise BadArguments(f"range end {end} is before start {start}")
            if end > now:
                raise BadArguments(f"range end {end} is in the future (now is {now})")
            points = math.floor((end - start) / step) + 1
            notice: list[str] = []
            if points > MAX_POINTS:
                start = end - (MAX_POINTS - 1) * step
                notice.append(f"range shortened to the last {MAX_POINTS} points (start={start})")
            raw = self._evaluate(lambda: engine.range(query, start, end, step))
            series = [_series_entry(s) for s in raw]
            answer: dict[str, Any] = {"resultType": "matrix", "start": start, "end": end, "step": step}
        else:
            t = args.get("time", now)
            if t > now:
                raise BadArguments(f"time {t} is in the future (now is {now})")
            raw = self._evaluate(lambda: engine.instant(query, t))
            notice = []
            if isinstance(raw, str):
                return {"resultType": "string", "time": t, "result": raw}
            if isinstance(raw, int | float):
                return {"resultType": "scalar", "time": t, "result": finite(float(raw))}
            series = [_series_entry(s, t) for s in raw]
            kind = "matrix" if any("values" in s for s in series) else "vector"
            answer = {"resultType": kind, "time": t}
        series.sort(key=lambda s: sorted(s["metric"].items()))
        if len(series) > cap:
            notice.append(f"{len(series) - cap} of {len(series)} series cut (raise max_series or aggregate)")
        answer["result"] = series[:cap]
        if notice:
            answer["truncated"] = "; ".join(notice)
        return answer

    @staticmethod
    def _evaluate(run: Callable[[], Any]) -> Any:
        """Run the evaluator; what it refuses (`PromQLError` is a ValueError) is bad input."""
        try:
            return run()
        except ValueError as problem:
            raise BadArguments(f"PromQL error: {problem}") from None


def _series_entry(entry: Mapping[str, Any], t: float | None = None) -> dict[str, Any]:
    metric = {str(k): str(v) for k, v in entry["labels"].items()}
    if "value" in entry:
        return {"metric": metric, "value": [t, finite(float(entry["value"]))]}
    values = [[ts, finite(float(v))] for ts, v in entry["values"]]
    return {"metric": metric, "values": values[-MAX_POINTS:]}
