"""Jaeger's query API v3 (HTTP) served over the twin, for anything that reads traces from Jaeger.

Upstream: `jaegertracing/jaeger` cmd/jaeger/internal/extension/jaegerquery/internal/apiv3/
http_gateway.go (routes, `returnTraces`, `tryHandleError`) and query_parser.go (parameters):

    GET /api/v3/services                       {"services": [...]}
    GET /api/v3/operations?service=&spanKind=  {"operations": [{"name", "spanKind"}]}
    GET /api/v3/traces?query.serviceName=&query.startTimeMin=&query.startTimeMax=
        [&query.searchDepth=100][&query.durationMin=<Go duration>][&query.attributes=<JSON>]
    GET /api/v3/traces/<trace id>              {"result": <OTLP TracesData>}

Both times of a search are required, RFC 3339, the first before the second; nothing found is a
404 `{"error": {"httpCode": 404, "message": "No traces found"}}`; a malformed parameter a 400 with
`malformed parameter <name>: ...`. Traces are OTLP/JSON (`otlp_traces`).

What the twin's search means (the Kubernetes backend narrows a real Jaeger's answers to the
same, docs/kubernetes-backend.md): a trace matches a service if any of its spans is that
service's; `startTime*` bound the trace's start; `durationMin` is the whole trace's (its root
span's); `query.attributes` `{"error": "true"}` keeps traces with a failed span; `searchDepth`
keeps the newest traces. The service name may be left out here (all services), which Jaeger's
storages refuse.

Times: the twin's t = 0 is `TWIN_EPOCH_UNIX` (as in the Prometheus API). The twin is not
thread-safe: every request holds the shared lock.
"""

from __future__ import annotations

import json
import re
import threading
from datetime import datetime
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pytest_marathon.apiserver.http_reply import QuietHandler, ServedHttp, serve_in_thread
from pytest_marathon.apiserver.otlp_traces import to_otlp
from pytest_marathon.apiserver.prom_format import TWIN_EPOCH_UNIX
from pytest_marathon.backends.base import Backend

API = "/api/v3"
DEFAULT_SEARCH_DEPTH = 100  # query_parser.go defaultSearchDepth
_TRACE_ID = re.compile(r"^[0-9a-f]{1,32}$")
_GO_DURATION = re.compile(r"^(\d+(?:\.\d+)?(ns|us|µs|ms|s|m|h))+$")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class JaegerError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _one(params: dict[str, list[str]], *names: str) -> tuple[str, str]:
    """The canonical parameter, else its deprecated snake_case alias (`getQueryParam`)."""
    for name in names:
        if params.get(name, [""])[0] != "":
            return params[name][0], name
    return "", names[0]


def _rfc3339(text: str, name: str) -> float:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None or text[10:11] not in ("T", "t"):
        raise JaegerError(400, f'malformed parameter {name}: parsing time "{text}" as RFC3339')
    return moment.timestamp() - TWIN_EPOCH_UNIX


def _go_duration_ms(text: str, name: str) -> float:
    if not _GO_DURATION.match(text):
        raise JaegerError(400, f'malformed parameter {name}: time: invalid duration "{text}"')
    seconds = sum(float(n) * _UNIT_SECONDS[unit]
                  for n, unit in re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", text))
    return seconds * 1000.0


class JaegerApi:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def _all(self) -> list[dict[str, Any]]:
        return self.backend.traces(limit=10**9)

    def services(self, _params: dict[str, list[str]]) -> Any:
        return {"services": sorted({s for record in self._all() for s in record["services"]})}

    def operations(self, params: dict[str, list[str]]) -> Any:
        service = params.get("service", [""])[0]
        kind, _ = _one(params, "spanKind", "span_kind")
        seen: dict[tuple[str, str], None] = {}
        for summary in self._all():
            if service and service not in summary["services"]:
                continue
            record = self.backend.trace(summary["trace_id"]) or {"spans": []}
            for span in record["spans"]:
                span_kind = span["kind"].removeprefix("SPAN_KIND_").lower()
                if (not service or span["service"] == service) and (not kind or kind == span_kind):
                    seen[(span["name"], span_kind)] = None
        return {"operations": [{"name": n, "spanKind": k} for n, k in sorted(seen)]}

    def find(self, params: dict[str, list[str]]) -> Any:
        service, _ = _one(params, "query.serviceName", "query.service_name")
        low, low_name = _one(params, "query.startTimeMin", "query.start_time_min")
        high, high_name = _one(params, "query.startTimeMax", "query.start_time_max")
        if not low or not high:
            raise JaegerError(400, "query.startTimeMin and query.startTimeMax are required")
        since, until = _rfc3339(low, low_name), _rfc3339(high, high_name)
        if not since < until:
            raise JaegerError(400, "query.startTimeMin must be before query.startTimeMax")
        depth_text, depth_name = _one(params, "query.searchDepth", "query.search_depth",
                                      "query.num_traces")
        try:
            depth = int(depth_text) if depth_text else DEFAULT_SEARCH_DEPTH
        except ValueError:
            raise JaegerError(400, f'malformed parameter {depth_name}: strconv.Atoi: parsing '
                                   f'"{depth_text}": invalid syntax') from None
        duration_text, duration_name = _one(params, "query.durationMin", "query.duration_min")
        min_ms = _go_duration_ms(duration_text, duration_name) if duration_text else None
        errors_only = False
        attributes_text = params.get("query.attributes", [""])[0]
        if attributes_text:
            try:
                attributes = json.loads(attributes_text)
                if not isinstance(attributes, dict):
                    raise ValueError("not an object of strings")
            except ValueError as exc:
                raise JaegerError(400, f"malformed parameter query.attributes: {exc}") from None
            errors_only = str(attributes.get("error", "")).lower() == "true"
        found = self.backend.traces(service=service or None, since=since, until=until,
                                    errors_only=errors_only, min_duration_ms=min_ms, limit=depth)
        return self._result([s["trace_id"] for s in found])

    def get(self, trace_id: str) -> Any:
        if not _TRACE_ID.match(trace_id):
            raise JaegerError(400, f"malformed parameter trace_id: invalid trace id {trace_id!r}")
        return self._result([trace_id.rjust(32, "0")])

    def _result(self, trace_ids: list[str]) -> Any:
        records = [r for r in (self.backend.trace(t) for t in trace_ids) if r is not None]
        if not records:
            raise JaegerError(404, "No traces found")
        namespace = str(self.backend.topology().get("namespace", ""))
        return {"result": to_otlp(records, namespace, float(TWIN_EPOCH_UNIX))}

    def route(self, path: str, params: dict[str, list[str]]) -> Any:
        if path == f"{API}/services":
            return self.services(params)
        if path == f"{API}/operations":
            return self.operations(params)
        if path == f"{API}/traces":
            return self.find(params)
        if path.startswith(f"{API}/traces/") and path.count("/") == 4:
            return self.get(path.rsplit("/", 1)[1])
        raise JaegerError(404, "404 page not found")


JaegerApiHandle = ServedHttp


def _handler(api: JaegerApi, lock: Any) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            parts = urlsplit(self.path)
            try:
                with lock:
                    answer = api.route(parts.path, parse_qs(parts.query, keep_blank_values=True))
            except JaegerError as problem:
                if problem.message == "404 page not found":
                    self._send(404, b"404 page not found\n", "text/plain; charset=utf-8")
                    return
                error = {"error": {"httpCode": problem.status, "message": problem.message}}
                # http.Error: the JSON as a plain-text body with a trailing newline
                self._send(problem.status, (json.dumps(error) + "\n").encode(),
                           "text/plain; charset=utf-8")
                return
            self._send(200, json.dumps(answer).encode(), "application/json")

    return Handler


def start_jaeger_api(backend: Backend, *, host: str = "127.0.0.1", port: int = 0,
                     lock: Any = None) -> JaegerApiHandle:
    """Serve Jaeger's query API v3 over `backend` until `close()`."""
    lock = threading.RLock() if lock is None else lock
    return serve_in_thread(_handler(JaegerApi(backend), lock), host=host, port=port, lock=lock,
                           name="jaeger-api")
