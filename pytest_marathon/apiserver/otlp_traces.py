"""Twin trace records as OTLP/JSON traces, and back: the form Jaeger's query API v3 answers in.

Jaeger v2 (`jaegertracing/jaeger` cmd/jaeger/internal/extension/jaegerquery/internal/apiv3/
http_gateway.go, `returnTrace`) wraps an OTLP `TracesData` as `{"result": {"resourceSpans":
[...]}}`. OTLP/JSON (opentelemetry-proto, docs/specification.md "JSON Protobuf Encoding"):
trace and span ids are lowercase hex, 64-bit integers (times in ns, `intValue`) are decimal
strings, enums are integers (span kind 1 internal, 2 server, 3 client; status code 0 unset,
1 ok, 2 error).

Each trace's spans are grouped by resource, trace after trace in the order given, as the gateway
concatenates the `ResourceSpans` of the traces it found (`returnTraces`); a resource is
`service.name` with `k8s.pod.name` and `k8s.namespace.name` (on a cluster the latter two come
only from a collector running the `k8sattributes` processor, which the shipped one does not). What a
twin record carries beyond its spans is derived from them the way a reader of a real trace
would: the root span's service, its `http.route` and `http.response.status_code` (the
frontend's otelhttp server span), and whether any span has status error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pytest_marathon.twin.telemetry import trace_record

SPAN_KINDS = {"SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3,
              "SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5}
STATUS_CODES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_KIND_NAMES = {v: k for k, v in SPAN_KINDS.items()}
_STATUS_NAMES = {v: k for k, v in STATUS_CODES.items()}
ROUTE = "http.route"
HTTP_STATUS = "http.response.status_code"


def _base_nanos(time_base: float) -> int:
    """t = 0 in unix nanoseconds, in integers (1.7e18 is past a float's exact range)."""
    return round(time_base * 1e6) * 1000


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def _plain(value: Mapping[str, Any]) -> Any:
    if "intValue" in value:
        return int(value["intValue"])
    for key in ("boolValue", "doubleValue", "stringValue"):
        if key in value:
            return value[key]
    return None


def _attributes(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _value(value)} for key, value in values.items()]


def to_otlp(records: Iterable[Mapping[str, Any]], namespace: str, time_base: float) -> dict[str, Any]:
    """Full twin trace records (with `spans`) as one OTLP `TracesData`; t = 0 is `time_base`."""
    resources: dict[tuple[int, str, str], list[dict[str, Any]]] = {}
    base = _base_nanos(time_base)
    for index, record in enumerate(records):
        for span in record["spans"]:
            start = base + round(float(span["start"]) * 1e9)
            attributes = dict(span.get("attributes") or {})
            if not span["parent_span_id"]:
                attributes[ROUTE] = record["route"]
                attributes[HTTP_STATUS] = int(record["http_status"])
            if span.get("peer"):
                attributes["server.address"], _, port = str(span["peer"]).rpartition(":")
                if port.isdigit():
                    attributes["server.port"] = int(port)
            resources.setdefault((index, span["service"], span["pod"]), []).append({
                "traceId": span["trace_id"],
                "spanId": span["span_id"],
                "parentSpanId": span["parent_span_id"],
                "name": span["name"],
                "kind": SPAN_KINDS[span["kind"]],
                "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(start + round(float(span["duration_ms"]) * 1e6)),
                "attributes": _attributes(attributes),
                "status": {"code": STATUS_CODES[span["status"]], "message": span["status_message"]},
            })
    return {"resourceSpans": [
        {"resource": {"attributes": _attributes({"service.name": service, "k8s.pod.name": pod,
                                                 "k8s.namespace.name": namespace})},
         "scopeSpans": [{"scope": {}, "spans": spans}]}
        for (_index, service, pod), spans in resources.items()
    ]}


def from_otlp(data: Mapping[str, Any], time_base: float) -> list[dict[str, Any]]:
    """OTLP `TracesData` as twin trace records (with `spans`), oldest first (traces that start
    at the same time keep the order they came in)."""
    spans_by_trace: dict[str, list[dict[str, Any]]] = {}
    base = _base_nanos(time_base)
    for resource_spans in data.get("resourceSpans") or []:
        resource = {a["key"]: _plain(a["value"])
                    for a in (resource_spans.get("resource") or {}).get("attributes") or []}
        for scope in resource_spans.get("scopeSpans") or []:
            for raw in scope.get("spans") or []:
                attributes = {a["key"]: _plain(a["value"]) for a in raw.get("attributes") or []}
                start = (int(raw["startTimeUnixNano"]) - base) / 1e9
                duration_ms = (int(raw["endTimeUnixNano"]) - int(raw["startTimeUnixNano"])) / 1e6
                span: dict[str, Any] = {
                    "trace_id": raw["traceId"], "span_id": raw["spanId"],
                    "parent_span_id": raw.get("parentSpanId") or "",
                    "service": str(resource.get("service.name", "")),
                    "pod": str(resource.get("k8s.pod.name", "")),
                    "name": raw["name"], "kind": _KIND_NAMES.get(int(raw.get("kind", 0)), "SPAN_KIND_UNSPECIFIED"),
                    "start": start, "duration_ms": duration_ms,
                    "status": _STATUS_NAMES.get(int((raw.get("status") or {}).get("code", 0)),
                                                "STATUS_CODE_UNSET"),
                    "status_message": (raw.get("status") or {}).get("message", ""),
                }
                address = attributes.pop("server.address", None)
                port = attributes.pop("server.port", None)
                if address is not None:
                    span["peer"] = f"{address}:{port}" if port is not None else str(address)
                if not span["parent_span_id"]:
                    span["_route"] = attributes.pop(ROUTE, "")
                    span["_http_status"] = attributes.pop(HTTP_STATUS, 0)
                if attributes:
                    span["attributes"] = attributes
                spans_by_trace.setdefault(span["trace_id"], []).append(span)
    records = [_record(trace_id, spans) for trace_id, spans in spans_by_trace.items()]
    return sorted(records, key=lambda r: r["t"])


def _record(trace_id: str, spans: list[dict[str, Any]]) -> dict[str, Any]:
    root = next((s for s in spans if not s["parent_span_id"]), min(spans, key=lambda s: s["start"]))
    route, status = root.pop("_route", ""), root.pop("_http_status", 0)
    return trace_record(trace_id, root["start"], route, status, root, spans)
