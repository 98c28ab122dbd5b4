"""Telemetry of the twin in virtual time: metrics, logs, traces and the entry point's SLI.

Request-level observations accumulate in cumulative counters and histograms between scrapes;
every 15 s a scrape appends one sample per series to the `SeriesStore` with the names and labels
real exporters use (OTel semconv, span-metrics connector, cAdvisor, kube-state-metrics, redis
exporter), so alert rules written for Prometheus run unchanged. Logs and traces are bounded ring
buffers, as a real backend's retention is.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterable
from typing import Any

from pytest_marathon.backends.base import SliSample
from pytest_marathon.tsdb import STALE_NAN, Series, SeriesStore, is_stale, label_key
from pytest_marathon.twin.errors import code_number

SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
MS_BUCKETS = (2.0, 4.0, 6.0, 8.0, 10.0, 50.0, 100.0, 200.0, 400.0, 800.0, 1000.0, 1400.0, 2000.0, 5000.0, 10000.0, 15000.0)
LOG_RETENTION = 200_000
TRACE_RETENTION = 2_000
WAITING_REASONS = ("ContainerCreating", "CrashLoopBackOff", "ErrImagePull", "ImagePullBackOff", "CreateContainerConfigError")


class Histogram:
    __slots__ = ("bounds", "counts", "total", "count")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0.0] * (len(bounds) + 1)
        self.total = 0.0
        self.count = 0.0

    def observe(self, value: float, weight: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += weight
        self.total += value * weight
        self.count += weight

    def cumulative(self) -> list[float]:
        out, running = [], 0.0
        for c in self.counts:
            running += c
            out.append(running)
        return out


class Telemetry:
    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.store = SeriesStore()
        self.logs: deque[tuple[float, str, str, str, str, str]] = deque(maxlen=LOG_RETENTION)
        self.traces: deque[dict[str, Any]] = deque(maxlen=TRACE_RETENTION)
        self._trace_index: dict[str, dict[str, Any]] = {}
        self.sli: list[SliSample] = []
        self._http: dict[tuple[str, ...], Histogram] = {}
        self._server: dict[tuple[str, ...], Histogram] = {}
        self._client: dict[tuple[str, ...], Histogram] = {}
        self._spans: dict[tuple[str, ...], Histogram] = {}
        self._log_counts: dict[tuple[str, str, str], float] = {}
        self._handles: dict[tuple[str, tuple[tuple[str, str], ...]], Series] = {}
        self._pod_series: dict[str, list[Series]] = {}

    # --- Sink (what requests report) -------------------------------------------------------------
    def log(self, t: float, service: str, pod: str, level: str, message: str, trace_id: str) -> None:
        self.logs.append((t, service, pod, level, message, trace_id))
        key = (service, pod, level)
        self._log_counts[key] = self._log_counts.get(key, 0.0) + 1.0

    def server(self, service: str, method: str, code: str, seconds: float, weight: float) -> None:
        _hist(self._server, (service, method, str(code_number(code))), SECONDS_BUCKETS).observe(seconds, weight)

    def client(self, service: str, peer: str, method: str, code: str, seconds: float, weight: float) -> None:
        _hist(self._client, (service, peer, method, str(code_number(code))), SECONDS_BUCKETS).observe(seconds, weight)

    def http(self, service: str, route: str, method: str, status: int, seconds: float, weight: float) -> None:
        _hist(self._http, (service, route, method, str(status)), SECONDS_BUCKETS).observe(seconds, weight)

    def span(self, span: dict[str, Any], weight: float) -> None:
        key = (span["service"], span["name"], span["kind"], span["status"])
        _hist(self._spans, key, MS_BUCKETS).observe(span["duration_ms"], weight)

    def add_trace(self, trace_id: str, t: float, route: str, spans: list[dict[str, Any]], status: int) -> None:
        if not spans:
            return
        root = spans[-1] if spans[-1]["parent_span_id"] == "" else next(s for s in spans if s["parent_span_id"] == "")
        record = {
            "trace_id": trace_id,
            "t": t,
            "root_service": root["service"],
            "route": route,
            "duration_ms": root["duration_ms"],
            "http_status": status,
            "error": any(s["status"] == "STATUS_CODE_ERROR" for s in spans),
            "services": sorted({s["service"] for s in spans}),
            "spans": sorted(spans, key=lambda s: s["span_id"]),
        }
        if len(self.traces) == self.traces.maxlen:
            self._trace_index.pop(self.traces[0]["trace_id"], None)
        self.traces.append(record)
        self._trace_index[trace_id] = record

    def add_sli(self, t: float, q: float, e: float, slow: float) -> None:
        self.sli.append(SliSample(t, round(q, 6), round(e, 6), round(slow, 6)))

    # --- scrape ---------------------------------------------------------------------------------------
    def _append(self, name: str, labels: tuple[tuple[str, str], ...], t: float, value: float) -> None:
        handle_key = (name, labels)
        series = self._handles.get(handle_key)
        if series is None:
            full = dict(labels)
            full["namespace"] = self.namespace
            self.store.append(name, full, t, value)
            wanted = label_key(name, full)
            series = next(s for s in reversed(self.store.series(name)) if s.key == wanted)
            self._handles[handle_key] = series
            pod = full.get("pod")
            if pod is not None:
                self._pod_series.setdefault(pod, []).append(series)
            return
        series.append(t, value)

    def retire_pods(self, t: float, live: set[str]) -> None:
        """Mark every series of a pod that no longer exists stale at t.

        Prometheus writes a staleness marker when a target (here: a pod) disappears, so
        instant queries stop seeing its series at once; without it a deleted pod's last values
        (not ready, crash-looping, near its memory limit) would keep alerts firing for the
        5-minute lookback after a rollout or scale-down already replaced it.
        """
        for pod in sorted(set(self._pod_series) - live):
            for series in self._pod_series.pop(pod):
                series.append(t, STALE_NAN)
        for key in [k for k in self._log_counts if k[1] not in live]:
            del self._log_counts[key]

    def _histograms(self, t: float, prefix: str, hists: dict[tuple[str, ...], Histogram], label_names: tuple[str, ...]) -> None:
        for key in sorted(hists):
            self._emit_hist(t, prefix, hists[key], tuple(zip(label_names, key)))

    def scrape_requests(self, t: float, rpc_services: dict[str, str]) -> None:
        self._histograms(t, "http_server_request_duration_seconds", self._http,
                         ("service", "http_route", "http_request_method", "http_response_status_code"))
        for key in sorted(self._server):
            service, method, code = key
            hist = self._server[key]
            self._emit_hist(t, "rpc_server_call_duration_seconds", hist,
                            (("service", service), ("rpc_service", rpc_services.get(service, service)),
                             ("rpc_method", method), ("rpc_grpc_status_code", code)))
        self._histograms(t, "rpc_client_call_duration_seconds", self._client,
                         ("service", "peer_service", "rpc_method", "rpc_grpc_status_code"))
        for key in sorted(self._spans):
            hist = self._spans[key]
            labels = tuple(zip(("service_name", "span_name", "span_kind", "status_code"), key))
            self._append("traces_span_metrics_calls_total", labels, t, hist.count)
            self._emit_hist(t, "traces_span_metrics_duration_milliseconds", hist, labels)
        for (service, pod, level), value in sorted(self._log_counts.items()):
            self._append("log_lines_total", (("service", service), ("pod", pod), ("level", level)), t, value)

    def _emit_hist(self, t: float, prefix: str, hist: Histogram, base: tuple[tuple[str, str], ...]) -> None:
        for bound, value in zip((*hist.bounds, float("inf")), hist.cumulative()):
            le = "+Inf" if bound == float("inf") else f"{bound:g}"
            self._append(f"{prefix}_bucket", (*base, ("le", le)), t, value)
        self._append(f"{prefix}_sum", base, t, hist.total)
        self._append(f"{prefix}_count", base, t, hist.count)

    def gauge(self, t: float, name: str, labels: Iterable[tuple[str, str]], value: float) -> None:
        self._append(name, tuple(labels), t, value)

    def absent(self, t: float, name: str, labels: Iterable[tuple[str, str]]) -> None:
        """A series the scrape no longer returns: Prometheus writes one staleness marker."""
        series = self._handles.get((name, tuple(labels)))
        if series is not None and series.values and not is_stale(series.values[-1]):
            series.append(t, STALE_NAN)

    # --- reads ------------------------------------------------------------------------------------------
    def query_logs(
        self,
        *,
        service: str | None,
        since: float | None,
        until: float | None,
        level: str | None,
        contains: str | None,
        limit: int,
    ) -> list[dict[str, Any]]:
        found = []
        for t, svc, pod, lvl, message, trace_id in reversed(self.logs):
            if until is not None and t > until:
                continue
            if since is not None and t < since:
                break
            if service is not None and svc != service:
                continue
            if level is not None and lvl != level:
                continue
            if contains is not None and contains not in message:
                continue
            found.append({"t": t, "service": svc, "pod": pod, "level": lvl, "message": message, "trace_id": trace_id})
            if len(found) >= limit:
                break
        found.reverse()
        return found

    def query_traces(
        self,
        *,
        service: str | None,
        since: float | None,
        until: float | None,
        errors_only: bool,
        min_duration_ms: float | None,
        limit: int,
    ) -> list[dict[str, Any]]:
        found = []
        for record in reversed(self.traces):
            if until is not None and record["t"] > until:
                continue
            if since is not None and record["t"] < since:
                break
            if service is not None and service not in record["services"]:
                continue
            if errors_only and not record["error"]:
                continue
            if min_duration_ms is not None and record["duration_ms"] < min_duration_ms:
                continue
            found.append({k: v for k, v in record.items() if k != "spans"} | {"span_count": len(record["spans"])})
            if len(found) >= limit:
                break
        found.reverse()
        return found

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        record = self._trace_index.get(trace_id)
        return None if record is None else {**record, "spans": [dict(s) for s in record["spans"]]}


def _hist(table: dict[tuple[str, ...], Histogram], key: tuple[str, ...], bounds: tuple[float, ...]) -> Histogram:
    hist = table.get(key)
    if hist is None:
        hist = table[key] = Histogram(bounds)
    return hist
