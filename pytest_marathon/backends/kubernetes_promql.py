"""PromQL over a Prometheus HTTP API: the evaluator the alert engine and `query_metrics` use when
the backend has no series store of its own (a real cluster's Prometheus, or the twin's API).

`RemotePromQL` answers the `PromQL` protocol (interface/metrics.py) and the alert engine's
`vector` through `prometheus-api-client`, mapping the backend's virtual seconds to the API's unix
times with `time_base` (the twin's API puts t = 0 at `TWIN_EPOCH_UNIX`; a real cluster's clock is
unix time already: base 0). Answers arrive as Prometheus writes them (values as decimal text,
upstream web/api/v1/api.go, `marshalPointJSON`), which round-trips a float exactly.
"""

from __future__ import annotations

from typing import Any

from prometheus_api_client import PrometheusApiClientException, PrometheusConnect

from pytest_marathon.alerting import PromQLError

Labels = tuple[tuple[str, str], ...]


class RemotePromQL:
    def __init__(self, url: str, *, time_base: float = 0.0, headers: dict[str, str] | None = None) -> None:
        self.client = PrometheusConnect(url=url, headers=headers, disable_ssl=True)
        self.time_base = time_base

    def _unix(self, t: float) -> str:
        return f"{round(self.time_base + t, 3):.3f}"

    def _t(self, unix: float) -> float:
        return round(float(unix) - self.time_base, 3)

    def _data(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        # the client's custom_query_range rounds times to whole seconds; the API takes decimals
        response = self.client._session.get(f"{self.client.url}/api/v1/{path}", params=params,
                                            headers=self.client.headers, timeout=60)
        doc = response.json()
        if doc.get("status") != "success":
            raise PromQLError(str(doc.get("error") or response.text))
        return doc["data"]

    def instant(self, query: str, t: float) -> list[dict[str, Any]] | float | str:
        """The PromQLEngine's shape: a list of {"labels", "value"} (or "values"), a float, a string."""
        try:
            data = self._data("query", {"query": query, "time": self._unix(t)})
        except PrometheusApiClientException as exc:
            raise PromQLError(str(exc)) from None
        kind, result = data["resultType"], data["result"]
        if kind == "scalar":
            return float(result[1])
        if kind == "string":
            return str(result[1])
        if kind == "matrix":
            return [{"labels": r["metric"], "values": [[self._t(ts), float(v)] for ts, v in r["values"]]}
                    for r in result]
        return [{"labels": r["metric"], "value": float(r["value"][1])} for r in result]

    def range(self, query: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        data = self._data("query_range", {"query": query, "start": self._unix(start), "end": self._unix(end),
                                          "step": f"{step:g}"})
        return [{"labels": r["metric"], "values": [[self._t(ts), float(v)] for ts, v in r["values"]]}
                for r in data["result"]]

    def vector(self, query: str, t: float) -> list[tuple[Labels, float]]:
        """What the alert engine evaluates a rule with: (sorted labels, value) pairs."""
        data = self._data("query", {"query": query, "time": self._unix(t)})
        if data["resultType"] != "vector":
            raise PromQLError(f"expected a vector expression, got {data['resultType']}: {query}")
        out = [(tuple(sorted(r["metric"].items())), float(r["value"][1])) for r in data["result"]]
        return sorted(out, key=lambda item: item[0])

    def share_cache(self, t: float) -> None:
        """No cache to share: the remote Prometheus keeps its own."""
