"""Request metrics as the shipped collector derives them from spans (`deploy/otel-collector.yaml`).

Upstream Online Boutique v0.10.6 exports traces only: the Go services install a tracer provider
and leave metrics as a TODO (`src/frontend/main.go` and `src/checkoutservice/main.go` `initStats`),
and the Node and Python gRPC instrumentations emit spans, not metrics. Every request metric a real
cluster has therefore comes from the collector's spanmetrics connector
(opentelemetry-collector-contrib `connector/spanmetricsconnector`, default namespace
`traces.span.metrics`, default unit ms and default buckets) rendered by the Prometheus exporter:

    traces_span_metrics_calls_total
    traces_span_metrics_duration_milliseconds_bucket / _sum / _count

with the connector's default dimensions `service_name`, `span_name`, `span_kind`, `status_code`,
the dimensions the shipped config adds (span attributes of semantic conventions v1.37.0, absent
attributes omitted), and `job` from the resource's `service.name` (prometheus exporter). The
services set no `service.instance.id`, so there is no `instance` label, and no Kubernetes
attribute is attached, so these series carry no `namespace` either.

Span attributes per semconv v1.37.0 (`docs/rpc/grpc.md`, `docs/rpc/rpc-spans.md`,
`docs/http/http-spans.md`): gRPC spans carry the numeric `rpc.grpc.status_code` and the status
their instrumentation chose (`twin/instrumentation.py`); client spans
`server.address` (the dialled host); the frontend's HTTP server span `http.request.method` and
`http.response.status_code` and no `http.route` (upstream wraps the whole router in
`otelhttp.NewHandler(handler, "frontend")`, so every server span is named `frontend`).
"""

from __future__ import annotations

from functools import cache
from typing import Any

#: Span attributes the shipped connector config lists under `dimensions`, in config order.
DIMENSIONS = ("rpc.grpc.status_code", "server.address", "http.request.method", "http.response.status_code")
CALLS = "traces_span_metrics_calls_total"
DURATION = "traces_span_metrics_duration_milliseconds"
#: Connector default buckets (ms): 2ms 4ms 6ms 8ms 10ms 50ms 100ms 200ms 400ms 800ms 1s 1400ms 2s 5s 10s 15s.
BUCKETS_MS = (2.0, 4.0, 6.0, 8.0, 10.0, 50.0, 100.0, 200.0, 400.0, 800.0, 1000.0, 1400.0, 2000.0, 5000.0, 10000.0,
              15000.0)

SeriesKey = tuple[tuple[str, str], ...]


@cache  # a handful of attribute names, asked for on every span
def prom_label(attribute: str) -> str:
    """The Prometheus exporter's label for an attribute: every non-alphanumeric byte becomes `_`."""
    return "".join(c if c.isalnum() else "_" for c in attribute)


def is_grpc_name(name: str) -> bool:
    """A gRPC span's name is the full method, `package.Service/Method` (semconv `rpc-spans.md`)."""
    service, _, method = name.partition("/")
    return bool(method) and "." in service and " " not in name


def grpc_labels(span: dict[str, Any]) -> SeriesKey:
    """Labels of a gRPC span (server or client) as the connector and exporter render them. The
    span's status and `rpc.grpc.status_code` are what its service's instrumentation set
    (`twin/instrumentation.py`); the connector only copies them."""
    service = str(span["service"])
    client = span["kind"] == "SPAN_KIND_CLIENT"
    attrs = {"rpc.grpc.status_code": str(span["attributes"]["rpc.grpc.status_code"])}
    if client:
        attrs["server.address"] = _host(str(span.get("peer") or ""))
    return _labels(service, str(span.get("name") or ""), str(span["kind"]), span["status"] == "STATUS_CODE_ERROR",
                   attrs)


def messaging_labels(span: dict[str, Any]) -> SeriesKey:
    """Labels of a producer, consumer or database client span: the connector's defaults plus
    `server.address` where the span has a peer (none of the gRPC or HTTP dimensions apply)."""
    attrs = {}
    if span.get("peer"):
        attrs["server.address"] = _host(str(span["peer"]))
    return _labels(str(span["service"]), str(span.get("name") or ""), str(span["kind"]),
                   span["status"] == "STATUS_CODE_ERROR", attrs)


def http_server_labels(service: str, method: str, status: int) -> SeriesKey:
    """Labels of the entry point's `otelhttp` server span: named after the handler's operation
    (the service), an error only for 5xx (semconv `docs/http/http-spans.md`, status)."""
    attrs = {"http.request.method": method, "http.response.status_code": str(status)}
    return _labels(service, service, "SPAN_KIND_SERVER", status >= 500, attrs)


def http_labels(span: dict[str, Any]) -> SeriesKey:
    """Labels of an HTTP span that carries its own attributes (server spans named `<method>
    <route>`, client spans `<method>`, semconv `docs/http/http-spans.md`): the status code is
    absent on a client span that got no response; `server.address` is the dialled host."""
    attrs = {key: str(value) for key, value in span["attributes"].items()
             if key in ("http.request.method", "http.response.status_code")}
    if span["kind"] == "SPAN_KIND_CLIENT":
        attrs["server.address"] = _host(str(span.get("peer") or ""))
    return _labels(str(span["service"]), str(span.get("name") or ""), str(span["kind"]),
                   span["status"] == "STATUS_CODE_ERROR", attrs)


def _labels(service: str, name: str, kind: str, error: bool, attrs: dict[str, str]) -> SeriesKey:
    labels = [
        ("job", service),
        ("service_name", service),
        ("span_name", name),
        ("span_kind", kind),
        ("status_code", "STATUS_CODE_ERROR" if error else "STATUS_CODE_UNSET"),
    ]
    labels += [(prom_label(d), attrs[d]) for d in DIMENSIONS if attrs.get(d)]
    return tuple(labels)


def _host(addr: str) -> str:
    """`server.address` of a client span: the host part of the target the client dialled."""
    return addr.rsplit(":", 1)[0] if ":" in addr else addr
