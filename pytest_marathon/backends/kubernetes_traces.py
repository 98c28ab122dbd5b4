"""Traces for the Kubernetes backend from a Jaeger query service (API v3 over HTTP).

A real cluster keeps its traces in Jaeger (deploy/: the collector exports OTLP to it); the twin's
API server answers the same API (apiserver/jaeger.py). Jaeger's search differs from the twin's
in ways this client narrows back (docs/kubernetes-backend.md): its storages need a service
name, so a search of all services is first asked without one (the twin's API answers it), and where
that is refused, of each service (the app's entry service first: its traces are nearly all),
merging the answers and keeping each answer's order among traces that start together (traces
that start at the same microsecond may then come in another order than the twin's); `durationMin` may match any span,
so the whole trace's duration is checked again; and a failed trace is kept only if one of its
spans failed. The answer is the twin's: the newest `limit` traces of the window, oldest first,
each a summary with `span_count`.
"""

from __future__ import annotations

import bisect
import json
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from typing import Any

from pytest_marathon.apiserver.otlp_traces import from_otlp
from pytest_marathon.backends.base import BackendError


class JaegerRefused(BackendError):
    """A 400: the search is one this Jaeger (its storage) does not serve."""


class JaegerTraces:
    def __init__(self, url: str, *, time_base: float, now: Any, entry_service: str | None = None) -> None:
        """`time_base`: unix time of the backend's t = 0; `now()`: the backend's virtual now."""
        self.url = url.rstrip("/")
        self.time_base = time_base
        self._now = now
        self.entry_service = entry_service

    def _get(self, path: str, params: dict[str, str] | None = None) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        try:
            with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=60) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            body = exc.read().decode(errors="replace")
            try:
                message = json.loads(body)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = body.strip() or exc.reason
            kind = JaegerRefused if exc.code == 400 else BackendError
            raise kind(f"Jaeger at {self.url}: HTTP {exc.code}: {message}") from None
        except OSError as exc:
            raise BackendError(f"Jaeger at {self.url} is unreachable: {exc}") from None

    def _time(self, t: float) -> str:
        return datetime.fromtimestamp(self.time_base + t, tz=UTC).isoformat().replace("+00:00", "Z")

    def services(self) -> list[str]:
        return list((self._get("/api/v3/services") or {}).get("services", []))

    def _search(self, service: str | None, since: float, until: float, errors_only: bool,
                min_duration_ms: float | None, limit: int) -> list[dict[str, Any]]:
        params = {"query.startTimeMin": self._time(since), "query.startTimeMax": self._time(until),
                  "query.searchDepth": str(limit)}
        if service is not None:
            params["query.serviceName"] = service
        if min_duration_ms is not None:
            params["query.durationMin"] = f"{int(min_duration_ms * 1000)}us"  # down: kept is narrowed
        if errors_only:
            params["query.attributes"] = json.dumps({"error": "true"})
        answer = self._get("/api/v3/traces", params)
        return from_otlp(answer["result"], self.time_base) if answer else []

    def traces(self, *, service: str | None, since: float | None, until: float | None,
               errors_only: bool, min_duration_ms: float | None, limit: int) -> list[dict[str, Any]]:
        if limit <= 0:
            return []
        low = -self.time_base if since is None else since  # no lower bound: the unix epoch
        high = (self._now() + 1.0) if until is None else until
        if not low < high:
            return []
        # a microsecond either side: the window is inclusive and times travel as RFC 3339
        low, high = low - 1e-6, high + 1e-6
        merged: list[dict[str, Any]] = []
        try:
            merged = self._search(service or None, low, high, errors_only, min_duration_ms, limit)
        except JaegerRefused:
            if service:
                raise
            for name in sorted(self.services(), key=lambda name: name != self.entry_service):
                _merge(merged, self._search(name, low, high, errors_only, min_duration_ms, limit))
        kept = [r for r in merged
                if (since is None or r["t"] >= since - 1e-6) and (until is None or r["t"] <= until + 1e-6)
                and (service is None or service in r["services"]) and (not errors_only or r["error"])
                and (min_duration_ms is None or r["duration_ms"] >= min_duration_ms)]
        return [{k: v for k, v in r.items() if k != "spans"} | {"span_count": len(r["spans"])}
                for r in kept[-limit:]]

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        answer = self._get(f"/api/v3/traces/{urllib.parse.quote(trace_id)}")
        records = from_otlp(answer["result"], self.time_base) if answer else []
        return records[0] if records else None


def _merge(merged: list[dict[str, Any]], answer: list[dict[str, Any]]) -> None:
    """Add an answer's new traces to `merged` (ordered by start): a trace that starts with the
    one before it in the answer goes right after that one, which Jaeger returned first, and any
    other after the traces that start no later."""
    ids = [r["trace_id"] for r in merged]
    previous: dict[str, Any] | None = None
    for record in answer:
        if record["trace_id"] not in ids:
            if previous is not None and previous["t"] == record["t"]:
                at = ids.index(previous["trace_id"]) + 1
            else:
                at = bisect.bisect_right([r["t"] for r in merged], record["t"])
            merged.insert(at, record)
            ids.insert(at, record["trace_id"])
        previous = record
