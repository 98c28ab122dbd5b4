"""The Prometheus HTTP API v1 served over the twin, for `promtool`, `prometheus-api-client`
and anything else that speaks to a Prometheus.

`start_prometheus_api(backend, rule_pack_app=...)` serves, on a daemon thread:
`/api/v1/query`, `/api/v1/query_range`, `/api/v1/series`, `/api/v1/labels` (GET and
form-encoded POST), `/api/v1/label/<name>/values`, `/api/v1/rules`, `/api/v1/alerts` and
`/api/v1/status/buildinfo`, in the envelope upstream writes ({"status": "success", "data": ...}
or {"status": "error", "errorType": ..., "error": ...} with its HTTP code; upstream
prometheus/prometheus web/api/v1/api.go `Register`, `respond`, `respondError`).

Times: the twin's virtual second t is unix time `TWIN_EPOCH_UNIX + t` (2026-01-01T00:00:00Z
at t = 0; see `prom_format`), in requests and in answers. A request without a time means the
twin's `now`, as a real Prometheus means its wall clock.

The twin is not thread-safe: every request holds `handle.lock` (pass your own `lock` to share
one), and whoever advances the twin while the server runs holds it too.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from pytest_marathon import __version__
from pytest_marathon.alerting import AlertEngine
from pytest_marathon.apiserver.http_reply import QuietHandler, ServedHttp, serve_in_thread
from pytest_marathon.apiserver.prom_format import ApiError
from pytest_marathon.apiserver.prom_queries import Params, PromQueries
from pytest_marathon.apiserver.prom_rules import AlertState
from pytest_marathon.backends.base import Backend

API = "/api/v1"
# What /api/v1/status/buildinfo reports: the twin's own version, on the 2.x API it implements.
BUILD_INFO = {
    "version": f"2.53.0+pytest-marathon.{__version__}",
    "revision": "",
    "branch": "",
    "buildUser": "pytest-marathon",
    "buildDate": "",
    "goVersion": "",
}
# web/web.go: the health and readiness probes; "/" (upstream: a redirect to the web UI, which
# the twin has none of) answers so that clients probing the server root find it up.
PLAIN = {
    "/-/healthy": "Prometheus Server is Healthy.\n",
    "/-/ready": "Prometheus Server is Ready.\n",
    "/": "The twin's Prometheus HTTP API: see /api/v1/.\n",
}


PrometheusApiHandle = ServedHttp


class PrometheusApi:
    """Routes a request to its endpoint; the endpoints return `data` or raise `ApiError`."""

    def __init__(self, backend: Backend, app: str, alerts: AlertEngine | None) -> None:
        self.queries = PromQueries(backend)
        self.alert_state = AlertState(backend, app, alerts)
        self._routes: dict[str, Callable[[Params], Any]] = {
            f"{API}/query": self.queries.query,
            f"{API}/query_range": self.queries.query_range,
            f"{API}/series": self.queries.series,
            f"{API}/labels": self.queries.label_names,
            f"{API}/rules": self._rules,
            f"{API}/alerts": self._alerts,
            f"{API}/status/buildinfo": lambda _: dict(BUILD_INFO),
        }

    def route(self, method: str, path: str) -> Callable[[Params], Any] | None:
        endpoint = self._routes.get(path)
        if endpoint is None and path.startswith(f"{API}/label/") and path.endswith("/values"):
            name = unquote(path[len(f"{API}/label/"):-len("/values")])
            if "/" not in name:

                def endpoint(params: Params) -> Any:
                    return self.queries.label_values(name, params)

        # web/api/v1/api.go Register: POST is accepted by query, query_range, series and labels
        if endpoint is not None and method == "POST" and path not in (
            f"{API}/query", f"{API}/query_range", f"{API}/series", f"{API}/labels"
        ):
            return None
        return endpoint

    def _rules(self, params: Params) -> Any:
        self.alert_state.catch_up()
        return self.alert_state.rules(params)

    def _alerts(self, _: Params) -> Any:
        self.alert_state.catch_up()
        return self.alert_state.alerts()


def _handler(api: PrometheusApi, lock: Any) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self._serve("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._serve("POST")

        def _serve(self, method: str) -> None:
            parts = urlsplit(self.path)
            params = parse_qs(parts.query, keep_blank_values=True)
            if method == "POST":
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                if self.headers.get_content_type() == "application/x-www-form-urlencoded":
                    for name, values in parse_qs(body, keep_blank_values=True).items():
                        params[name] = values + params.get(name, [])  # Go: body before URL
            if method == "GET" and parts.path in PLAIN:
                self._send(200, PLAIN[parts.path].encode(), "text/plain; charset=utf-8")
                return
            endpoint = api.route(method, parts.path)
            if endpoint is None:
                if api.route("GET", parts.path) is None:
                    self._send(404, b"404 page not found\n", "text/plain; charset=utf-8")
                else:
                    self._send(405, b"Method Not Allowed\n", "text/plain; charset=utf-8")
                return
            try:
                with lock:
                    data = endpoint(params)
            except ApiError as problem:
                self._error(problem)
                return
            except Exception as problem:  # a bug of ours: say so as upstream's errorInternal
                self._error(ApiError("internal", f"{type(problem).__name__}: {problem}"))
                return
            body_out = json.dumps({"status": "success", "data": data}, allow_nan=False)
            self._send(200, body_out.encode(), "application/json")

        def _error(self, problem: ApiError) -> None:
            answer = {"status": "error", "errorType": problem.error_type, "error": problem.message}
            self._send(problem.status, json.dumps(answer).encode(), "application/json")

    return Handler


def start_prometheus_api(
    backend: Backend,
    *,
    rule_pack_app: str,
    host: str = "127.0.0.1",
    port: int = 0,
    lock: Any = None,
    alerts: AlertEngine | None = None,
) -> PrometheusApiHandle:
    """Serve the Prometheus HTTP API over `backend` until `close()`.

    `alerts`: an alert engine the caller already evaluates (the API then only reads it);
    without one the API evaluates the `rule_pack_app` pack itself, up to the twin's time.
    """
    lock = threading.RLock() if lock is None else lock
    api = PrometheusApi(backend, rule_pack_app, alerts)
    return serve_in_thread(_handler(api, lock), host=host, port=port, lock=lock, name="prometheus-api")
