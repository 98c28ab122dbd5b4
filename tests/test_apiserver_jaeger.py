"""The twin's Jaeger query API (v3) answers as upstream's HTTP gateway does, and the Kubernetes
backend's Jaeger client reads the twin's own traces back through it.

Upstream: jaegertracing/jaeger cmd/jaeger/internal/extension/jaegerquery/internal/apiv3/
http_gateway.go and query_parser.go; OTLP/JSON as opentelemetry-proto specifies it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_marathon.apiserver.jaeger import start_jaeger_api
from pytest_marathon.apiserver.prom_format import TWIN_EPOCH_UNIX, rfc3339
from pytest_marathon.backends import create_backend
from pytest_marathon.backends.base import BackendError
from pytest_marathon.backends.kubernetes_traces import JaegerTraces

SEED = 5
END = 300.0


@pytest.fixture(scope="module")
def served() -> Any:
    twin = create_backend("boutique", SEED)
    twin.advance_to(120.0)
    handle = twin.chaos_start("datastore_outage", "redis-cart")
    twin.advance_to(180.0)
    twin.chaos_stop(handle)
    twin.advance_to(END)
    api = start_jaeger_api(twin)
    client = JaegerTraces(api.url, time_base=float(TWIN_EPOCH_UNIX), now=lambda: twin.now,
                          entry_service="frontend")
    yield twin, api, client
    api.close()


def _get(url: str) -> tuple[int, str, Any]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.headers.get_content_type(), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        body = exc.read().decode()
        try:
            return exc.code, exc.headers.get_content_type(), json.loads(body)
        except ValueError:
            return exc.code, exc.headers.get_content_type(), body


def _rounded(record: dict[str, Any] | None) -> Any:
    """OTLP carries nanoseconds: compare times to the microsecond."""
    if record is None:
        return None
    out = json.loads(json.dumps(record))
    out["t"] = round(out["t"], 6)
    for span in out.get("spans", []):
        span["start"] = round(span["start"], 6)
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    service=st.sampled_from([None, "frontend", "cartservice", "redis-cart", "checkoutservice", "nobody"]),
    window=st.tuples(st.floats(0, END), st.floats(1, END)).map(lambda w: (w[0], w[0] + w[1])),
    open_ended=st.booleans(),
    errors_only=st.booleans(),
    min_duration_ms=st.sampled_from([None, 5.0, 50.0, 500.0]),
    limit=st.integers(1, 40),
)
def test_a_search_through_jaeger_answers_what_the_twin_answers(
    served: Any, service: str | None, window: tuple[float, float], open_ended: bool,
    errors_only: bool, min_duration_ms: float | None, limit: int,
) -> None:
    twin, _api, client = served
    since, until = (None, None) if open_ended else window
    query = {"service": service, "since": since, "until": until, "errors_only": errors_only,
             "min_duration_ms": min_duration_ms, "limit": limit}
    expected = [_rounded(r) for r in twin.traces(**query)]
    assert [_rounded(r) for r in client.traces(**query)] == expected


def test_a_trace_by_id_is_the_twins_trace_and_an_unknown_one_is_none(served: Any) -> None:
    twin, _api, client = served
    failed = twin.traces(errors_only=True, limit=3)
    assert failed, "the outage produced failed traces"
    for summary in failed + twin.traces(limit=3):
        assert _rounded(client.trace(summary["trace_id"])) == _rounded(twin.trace(summary["trace_id"]))
    assert client.trace("0" * 31 + "1") is None


def test_answers_are_otlp_json_in_the_gateways_envelope(served: Any) -> None:
    twin, api, _client = served
    summary = twin.traces(errors_only=True, limit=1)[0]
    status, kind, body = _get(f"{api.url}/api/v3/traces/{summary['trace_id']}")
    assert (status, kind) == (200, "application/json")
    resource_spans = body["result"]["resourceSpans"]
    resources = {a["key"]: a["value"]["stringValue"]
                 for rs in resource_spans for a in rs["resource"]["attributes"]}
    assert resources["k8s.namespace.name"] == twin.namespace
    spans = [s for rs in resource_spans for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert {s["traceId"] for s in spans} == {summary["trace_id"]}
    assert all(isinstance(s["kind"], int) and s["startTimeUnixNano"].isdigit() for s in spans)
    assert any(s["status"]["code"] == 2 for s in spans)  # STATUS_CODE_ERROR
    root = next(s for s in spans if not s["parentSpanId"])
    attributes = {a["key"]: a["value"] for a in root["attributes"]}
    assert attributes["http.response.status_code"] == {"intValue": str(summary["http_status"])}
    assert attributes["http.route"] == {"stringValue": summary["route"]}


def test_bad_searches_are_refused_with_the_gateways_errors(served: Any) -> None:
    twin, api, _client = served
    base = f"{api.url}/api/v3/traces?"
    low, high = rfc3339(0.0), rfc3339(END)
    cases = [
        ({"query.serviceName": "frontend"}, 400, "query.startTimeMin and query.startTimeMax are required"),
        ({"query.startTimeMin": high, "query.startTimeMax": low}, 400, "must be before"),
        ({"query.startTimeMin": "yesterday", "query.startTimeMax": high}, 400,
         "malformed parameter query.startTimeMin"),
        ({"query.startTimeMin": low, "query.startTimeMax": high, "query.searchDepth": "ten"}, 400,
         "malformed parameter query.searchDepth"),
        ({"query.startTimeMin": low, "query.startTimeMax": high, "query.durationMin": "5 ms"}, 400,
         "malformed parameter query.durationMin"),
        ({"query.start_time_min": low, "query.start_time_max": high, "query.service_name": "nobody"},
         404, "No traces found"),
    ]
    for params, code, message in cases:
        status, _kind, body = _get(base + urllib.parse.urlencode(params))
        assert status == code and body["error"]["httpCode"] == code, (params, body)
        assert message in body["error"]["message"], (params, body)
    status, _kind, body = _get(f"{api.url}/api/v3/nothing")
    assert status == 404 and body.strip() == "404 page not found"


def test_services_and_operations_are_those_the_spans_carry(served: Any) -> None:
    twin, api, client = served
    everything = {s for r in twin.traces(limit=10**9) for s in r["services"]}
    assert set(client.services()) == everything and "frontend" in everything
    status, _kind, body = _get(f"{api.url}/api/v3/operations?service=productcatalogservice&spanKind=server")
    assert status == 200
    names = {op["name"] for op in body["operations"]}
    assert "hipstershop.ProductCatalogService/GetProduct" in names
    assert {op["spanKind"] for op in body["operations"]} == {"server"}


def test_an_unreachable_jaeger_is_a_backend_error_naming_it() -> None:
    client = JaegerTraces("http://127.0.0.1:9", time_base=0.0, now=lambda: 10.0)
    with pytest.raises(BackendError, match="Jaeger at http://127.0.0.1:9"):
        client.traces(service="frontend", since=None, until=None, errors_only=False,
                      min_duration_ms=None, limit=5)
