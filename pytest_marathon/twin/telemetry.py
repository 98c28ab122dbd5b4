"""Telemetry of the twin in virtual time: metrics, logs, traces and the entry point's SLI.

Spans accumulate in the cumulative counters and histograms the collector's spanmetrics connector
keeps (`twin/spanmetrics.py`); every 15 s a scrape appends one sample per series to the
`SeriesStore` with the names and labels the shipped exporters and collector config produce
(`deploy/otel-collector.yaml`, cAdvisor, kube-state-metrics, redis_exporter), so alert rules
written for Prometheus run unchanged. Application logs feed no metric: the shipped pipeline has
no log-derived counter. Logs and traces are bounded ring
buffers, as a real backend's retention is.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterable
from typing import Any

from pytest_marathon.backends.base import SliSample
from pytest_marathon.tsdb import STALE_NAN, Series, SeriesStore, is_stale, label_key
from pytest_marathon.twin import spanmetrics

LOG_RETENTION = 200_000
TRACE_RETENTION = 2_000
#: Series from the collector (OTLP-derived) carry no Kubernetes labels and node objects have no
#: namespace; everything else is scraped with the `namespace` of its object.
NO_NAMESPACE = frozenset({spanmetrics.CALLS, *(f"{spanmetrics.DURATION}_{s}" for s in ("bucket", "sum", "count")),
                          "kube_node_status_condition", "kube_node_status_allocatable",
                          # the collector's kafkametrics receiver: no resource attributes, no namespace
                          "kafka_consumer_group_lag", "kafka_consumer_group_lag_sum", "kafka_consumer_group_members",
                          "kafka_brokers"})


class Histogram:
    """One span-metrics histogram; `version` counts observations, so a scrape can tell that
    one is unchanged since it last read it (most are, between two scrapes)."""

    __slots__ = ("bounds", "counts", "total", "count", "version")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0.0] * (len(bounds) + 1)
        self.total = 0.0
        self.count = 0.0
        self.version = 0

    def observe(self, value: float, weight: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += weight
        self.total += value * weight
        self.count += weight
        self.version += 1

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
        self._spans: dict[spanmetrics.SeriesKey, Histogram] = {}
        self._grpc_hists: dict[tuple[Any, ...], Histogram] = {}
        self._http_hists: dict[tuple[Any, ...], Histogram] = {}
        self._other_hists: dict[tuple[Any, ...], Histogram] = {}
        self._span_order: list[spanmetrics.SeriesKey] = []  # _spans' keys sorted (keys are only added)
        # per key of _span_order, once known: [histogram, its series (calls, buckets, _sum,
        # _count), the histogram version last scraped, the values scraped then (None: none yet)]
        self._span_rows: list[list[Any] | None] = []
        self._entry_span: dict[str, Any] | None = None
        self._groups: dict[tuple[str, str], set[tuple[tuple[str, str], ...]]] = {}
        self._handles: dict[tuple[str, tuple[tuple[str, str], ...]], Series] = {}
        self._hist_handles: dict[tuple[str, tuple[tuple[str, str], ...]], list[Series]] = {}
        self._pod_series: dict[str, list[Series]] = {}

    # --- Sink (what requests report) -------------------------------------------------------------
    def log(self, t: float, service: str, pod: str, level: str, message: str, trace_id: str) -> None:
        self.logs.append((t, service, pod, level, message, trace_id))

    def server(self, service: str, method: str, code: str, seconds: float, weight: float) -> None:
        """No metric of its own: the server span carries it (upstream exports no RPC metrics)."""

    def client(self, service: str, peer: str, method: str, code: str, seconds: float, weight: float) -> None:
        """No metric of its own: the client span carries it."""

    def http(self, service: str, route: str, method: str, status: int, seconds: float, weight: float) -> None:
        """The entry point answered: its server span (held by `span`) gets the HTTP status.

        An answer with no span behind it (no frontend pod served the request: whatever refused
        it was not the frontend's otelhttp handler) leaves no series, as on a real cluster.
        """
        entry, self._entry_span = self._entry_span, None
        if entry is None or entry["service"] != service or weight <= 0:
            return
        labels = spanmetrics.http_server_labels(service, method, status)
        _hist(self._spans, labels, spanmetrics.BUCKETS_MS).observe(float(entry["duration_ms"]), weight)

    def span(self, span: dict[str, Any], weight: float, traced: bool = True) -> None:
        """Feed one finished span to the spanmetrics connector's counters (a service that does not
        trace exports nothing to feed)."""
        if weight <= 0 or not traced:
            return
        name = str(span.get("name") or "")
        attributes = span.get("attributes") or {}
        if "http.request.method" in attributes:
            # as for gRPC below: the histogram by the raw fields http_labels reads
            kind = span["kind"]
            raw = (span["service"], name, kind, span["status"], attributes["http.request.method"],
                   attributes.get("http.response.status_code"),
                   span.get("peer") if kind == "SPAN_KIND_CLIENT" else None)
            hist = self._http_hists.get(raw)
            if hist is None:
                hist = self._http_hists[raw] = _hist(self._spans, spanmetrics.http_labels(span),
                                                     spanmetrics.BUCKETS_MS)
            hist.observe(float(span["duration_ms"]), weight)
            return
        if span["kind"] == "SPAN_KIND_SERVER" and not span.get("parent_span_id") and not spanmetrics.is_grpc_name(name):
            self._entry_span = span  # the frontend's HTTP span; `http` adds its status
            return
        if "rpc.grpc.status_code" in attributes:
            # Most spans of a run repeat a few label sets: find the histogram by the span's raw
            # fields (what grpc_labels reads) before rendering its labels.
            kind = span["kind"]
            raw = (span["service"], name, kind, span["status"], attributes["rpc.grpc.status_code"],
                   span.get("peer") if kind == "SPAN_KIND_CLIENT" else None)
            hist = self._grpc_hists.get(raw)
            if hist is None:
                hist = self._grpc_hists[raw] = _hist(self._spans, spanmetrics.grpc_labels(span),
                                                     spanmetrics.BUCKETS_MS)
            hist.observe(float(span["duration_ms"]), weight)
            return
        # producer, consumer and database spans (twin/dataclients.py, twin/consumers.py)
        raw = (span["service"], name, span["kind"], span["status"], span.get("peer"))
        hist = self._other_hists.get(raw)
        if hist is None:
            hist = self._other_hists[raw] = _hist(self._spans, spanmetrics.messaging_labels(span),
                                                  spanmetrics.BUCKETS_MS)
        hist.observe(float(span["duration_ms"]), weight)

    def add_trace(self, trace_id: str, t: float, route: str, spans: list[dict[str, Any]], status: int) -> None:
        if not spans:
            return
        root = spans[-1] if spans[-1]["parent_span_id"] == "" else next(s for s in spans if s["parent_span_id"] == "")
        record = trace_record(trace_id, t, route, status, root, spans)
        if len(self.traces) == self.traces.maxlen:
            self._trace_index.pop(self.traces[0]["trace_id"], None)
        self.traces.append(record)
        self._trace_index[trace_id] = record

    def extend_trace(self, trace_id: str, t: float, route: str, spans: list[dict[str, Any]]) -> None:
        """Spans that join a stored trace later (a consumer's, under the producer's trace id), or
        start one of their own when the trace is unknown or gone."""
        record = self._trace_index.get(trace_id)
        if record is None:
            root = next((s for s in spans if not s["parent_span_id"]), spans[0])
            record = trace_record(trace_id, t, route, 0, root, spans)
            if len(self.traces) == self.traces.maxlen:
                self._trace_index.pop(self.traces[0]["trace_id"], None)
            self.traces.append(record)
            self._trace_index[trace_id] = record
            return
        known = {s["span_id"] for s in record["spans"]}
        merged = record["spans"] + [s for s in spans if s["span_id"] not in known]
        record["spans"] = sorted(merged, key=lambda s: s["span_id"])
        record["services"] = sorted({s["service"] for s in merged})
        record["error"] = any(s["status"] == "STATUS_CODE_ERROR" for s in merged)

    def add_sli(self, t: float, q: float, e: float, slow: float) -> None:
        self.sli.append(SliSample(t, round(q, 6), round(e, 6), round(slow, 6)))

    # --- scrape ---------------------------------------------------------------------------------------
    def _append(self, name: str, labels: tuple[tuple[str, str], ...], t: float, value: float) -> None:
        handle_key = (name, labels)
        series = self._handles.get(handle_key)
        if series is not None:
            # _push, inlined: every exporter sample of every scrape comes through here
            times = series.times
            if times[-1] < t:
                samples = series.values
                last = samples[-1]
                if not (value == last and value - value == 0.0):
                    series.quiet_since = times[-1]
                times.append(t)
                samples.append(value)
            else:
                series.append(t, value)
            return
        full = dict(labels)
        if name not in NO_NAMESPACE:
            full["namespace"] = self.namespace
        self.store.append(name, full, t, value)
        wanted = label_key(name, full)
        series = next(s for s in reversed(self.store.series(name)) if s.key == wanted)
        self._handles[handle_key] = series
        pod = full.get("pod")
        if pod is not None:
            self._pod_series.setdefault(pod, []).append(series)

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

    def scrape_requests(self, t: float, rpc_services: dict[str, str] | None = None) -> None:
        """The collector's Prometheus endpoint: every span-metrics series, cumulative since start
        (the connector's default `AGGREGATION_TEMPORALITY_CUMULATIVE`, no `metrics_expiration`)."""
        if len(self._span_order) != len(self._spans):
            self._span_order = sorted(self._spans)
            self._span_rows = [None] * len(self._span_order)
        rows = self._span_rows
        for i, labels in enumerate(self._span_order):
            row = rows[i]
            if row is None:
                hist = self._spans[labels]
                self._append(spanmetrics.CALLS, labels, t, hist.count)
                self._emit_hist(t, spanmetrics.DURATION, hist, labels)
                rows[i] = [hist, [self._handles[(spanmetrics.CALLS, labels)],
                                  *self._hist_handles[(spanmetrics.DURATION, labels)]], -1, None]
                continue
            # The usual scrape: the calls series, then the histogram's, as the branch above; a
            # histogram nothing observed since the last scrape gives the values it gave then.
            hist, handles, version, values = row
            if version != hist.version:
                values = row[3] = (hist.count, *hist.cumulative(), hist.total, hist.count)
                row[2] = hist.version
            for series, value in zip(handles, values):
                # _push, inlined: this loop writes most of a run's samples
                times = series.times
                if times[-1] < t:
                    samples = series.values
                    last = samples[-1]
                    if not (value == last and value - value == 0.0):
                        series.quiet_since = times[-1]
                    times.append(t)
                    samples.append(value)
                else:
                    series.append(t, value)

    def _emit_hist(self, t: float, prefix: str, hist: Histogram, base: tuple[tuple[str, str], ...]) -> None:
        handles = self._hist_handles.get((prefix, base))
        if handles is not None:
            # The usual scrape: the histogram's series exist, in bucket, _sum, _count order.
            for series, value in zip(handles, (*hist.cumulative(), hist.total, hist.count)):
                _push(series, t, value)
            return
        names = []
        for bound, value in zip((*hist.bounds, float("inf")), hist.cumulative()):
            le = "+Inf" if bound == float("inf") else f"{bound:g}"
            names.append((f"{prefix}_bucket", (*base, ("le", le))))
            self._append(*names[-1], t, value)
        names += [(f"{prefix}_sum", base), (f"{prefix}_count", base)]
        self._append(*names[-2], t, hist.total)
        self._append(*names[-1], t, hist.count)
        self._hist_handles[(prefix, base)] = [self._handles[key] for key in names]

    def gauge(self, t: float, name: str, labels: Iterable[tuple[str, str]], value: float) -> None:
        self._append(name, tuple(labels), t, value)

    def gauge_set(self, t: float, name: str, owner: str, samples: Iterable[tuple[tuple[tuple[str, str], ...], float]]) -> None:
        """The series an exporter writes for one object this scrape; those it wrote last scrape
        and no longer does (a waiting reason or condition reason that changed) go stale."""
        now = {}
        for labels, value in samples:
            now[labels] = value
            self._append(name, labels, t, value)
        before = self._groups.get((name, owner), set())
        for labels in sorted(before - set(now)):
            self.absent(t, name, labels)
        self._groups[(name, owner)] = set(now)

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


def trace_record(trace_id: str, t: float, route: str, http_status: int, root: dict[str, Any],
                 spans: list[dict[str, Any]]) -> dict[str, Any]:
    """One stored trace, as `traces`/`trace` answer it (and apiserver/otlp_traces rebuilds it
    from a Jaeger answer): the entry request's route and status, whether a span failed, the
    services it touched and its spans by id."""
    return {
        "trace_id": trace_id,
        "t": t,
        "root_service": root["service"],
        "route": route,
        "duration_ms": root["duration_ms"],
        "http_status": http_status,
        "error": any(s["status"] == "STATUS_CODE_ERROR" for s in spans),
        "services": sorted({s["service"] for s in spans}),
        "spans": sorted(spans, key=lambda s: s["span_id"]),
    }


def _push(series: Series, t: float, value: float) -> None:
    """Append through a kept series handle: a sample past the newest goes straight onto the
    arrays (keeping `quiet_since` as Series.append does), anything else through Series.append,
    which decides (replace or refuse)."""
    times = series.times
    if times and t <= times[-1]:
        series.append(t, value)
    else:
        values = series.values
        if values:
            last = values[-1]
            if not (value == last and value - value == 0.0):
                series.quiet_since = times[-1]
        elif value - value != 0.0:  # not finite
            series.quiet_since = t
        times.append(t)
        values.append(value)
