"""What the services' OpenTelemetry instrumentation records, as upstream Online Boutique v0.10.6
(GoogleCloudPlatform/microservices-demo) and its instrumentation libraries record it: which
services have spans at all, the status a span ends with, and a status outside gRPC's table
(paymentservice's card errors, code 400) carried through spans, span metrics and logs."""

from __future__ import annotations

import difflib
from typing import Any

import pytest

from pytest_marathon.backends import create_backend
from pytest_marathon.twin import instrumentation
from pytest_marathon.twin.engine import Twin

UNTRACED = ("cartservice", "shippingservice", "adservice")


@pytest.fixture(scope="module")
def healthy() -> Twin:
    backend = create_backend("boutique", seed=4)
    backend.advance_to(240.0)
    return backend


@pytest.fixture(scope="module")
def refusing() -> Twin:
    """paymentservice refuses the load generator's card (16 bare digits) as InvalidCreditCard."""
    backend = create_backend("boutique", seed=4)
    backend.advance_to(0.0)
    path = "service.py"
    source = backend.source("paymentservice", path=path)[path]
    old = "    if not luhn_valid(number):\n"
    new = '    if not luhn_valid(number) or len(number) == 16 and "-" not in card.get("credit_card_number", ""):\n'
    assert source.count(old) == 1
    patch = "".join(difflib.unified_diff(source.splitlines(keepends=True),
                                         source.replace(old, new).splitlines(keepends=True),
                                         fromfile=f"a/{path}", tofile=f"b/{path}"))
    assert backend.release("paymentservice", patch=patch, change_cause="refuse bare card numbers").ok
    backend.advance_to(420.0)
    return backend


def _spans(twin: Twin, limit: int = 500) -> list[dict[str, Any]]:
    spans = []
    for summary in twin.traces(limit=limit):
        spans += twin.trace(summary["trace_id"])["spans"]
    return spans


def _series(twin: Twin, **labels: str) -> list[Any]:
    return [s for s in twin.store.series("traces_span_metrics_calls_total")
            if all(s.labels.get(k) == v for k, v in labels.items())]


def test_untraced_services_leave_only_their_callers_client_spans(healthy: Twin) -> None:
    """v0.10.6 traces neither cartservice (no OpenTelemetry package in
    src/cartservice/src/cartservice.csproj), shippingservice (src/shippingservice/main.go
    initTracing: "TODO") nor adservice (AdService.java initTracing: "TODO"); the frontend and
    checkoutservice dial every backend with otelgrpc.NewClientHandler (main.go mustConnGRPC), so
    their client spans to the three still exist."""
    spans = _spans(healthy)
    assert not [s for s in spans if s["service"] in UNTRACED]
    called = {s["name"].split("/")[0] for s in spans if s["kind"] == "SPAN_KIND_CLIENT"}
    assert {"hipstershop.CartService", "hipstershop.ShippingService", "hipstershop.AdService"} <= called
    for service in UNTRACED:
        assert not _series(healthy, service_name=service), service
        assert _series(healthy, span_kind="SPAN_KIND_CLIENT", server_address=service), service
    traced = {s["service"] for s in spans if s["kind"] == "SPAN_KIND_SERVER"}
    assert {"frontend", "checkoutservice", "productcatalogservice", "currencyservice", "paymentservice",
            "emailservice", "recommendationservice"} <= traced
    ids = {s["span_id"] for s in spans}
    assert all(s["parent_span_id"] in ids for s in spans if s["parent_span_id"])


@pytest.mark.parametrize(("kind", "code", "language", "status"), [
    # otelgrpc interceptor.go serverStatus; semconv v1.37.0 docs/rpc/grpc.md "gRPC Status"
    ("SPAN_KIND_SERVER", "INVALID_ARGUMENT", "go", "STATUS_CODE_UNSET"),
    ("SPAN_KIND_SERVER", "NOT_FOUND", "go", "STATUS_CODE_UNSET"),
    ("SPAN_KIND_SERVER", "UNAVAILABLE", "go", "STATUS_CODE_ERROR"),
    # opentelemetry-python-contrib instrumentation-grpc _utilities.py _server_status
    ("SPAN_KIND_SERVER", "FAILED_PRECONDITION", "python", "STATUS_CODE_UNSET"),
    ("SPAN_KIND_SERVER", "UNKNOWN", "python", "STATUS_CODE_ERROR"),
    # opentelemetry-js instrumentation-grpc utils.ts _grpcStatusCodeToOpenTelemetryStatusCode
    ("SPAN_KIND_SERVER", "INVALID_ARGUMENT", "nodejs", "STATUS_CODE_ERROR"),
    ("SPAN_KIND_SERVER", "Code(400)", "nodejs", "STATUS_CODE_ERROR"),
    ("SPAN_KIND_SERVER", "OK", "nodejs", "STATUS_CODE_UNSET"),
    # every client instrumentation: any non-OK status
    ("SPAN_KIND_CLIENT", "NOT_FOUND", "go", "STATUS_CODE_ERROR"),
    ("SPAN_KIND_CLIENT", "Code(400)", "go", "STATUS_CODE_ERROR"),
    ("SPAN_KIND_CLIENT", "OK", "go", "STATUS_CODE_UNSET"),
])
def test_span_status_follows_each_languages_instrumentation(kind: str, code: str, language: str,
                                                             status: str) -> None:
    assert instrumentation.grpc_span_status(kind, code, language) == status


def test_card_errors_travel_as_code_400(refusing: Twin) -> None:
    """charge.js CreditCardError sets `code = 400`; grpc-js sends an error's integer code as the
    status (packages/grpc-js/src/server-call.ts serverErrorToStatus); grpc-go reads the number as
    is (internal/transport/http2_client.go) and prints it `Code(400)` (codes/code_string.go);
    checkoutservice wraps it (main.go chargeCard, PlaceOrder: Internal) and the frontend logs it."""
    desc = "Credit card info is invalid"
    frontend = [line["message"] for line in refusing.logs(service="frontend", level="error", limit=1000)]
    wanted = (f"rpc error: code = Internal desc = failed to charge card: could not charge the card: "
              f"rpc error: code = Code(400) desc = {desc}")
    assert any(wanted in message for message in frontend), frontend[-3:]
    warnings = [line["message"] for line in refusing.logs(service="paymentservice", level="warning", limit=100)]
    assert warnings and set(warnings) == {f"InvalidCreditCard [Error]: {desc}"}

    spans = _spans(refusing)
    client = [s for s in spans if s["service"] == "checkoutservice" and s["name"].endswith("PaymentService/Charge")
              and s["status_message"]]
    server = [s for s in spans if s["service"] == "paymentservice" and s["kind"] == "SPAN_KIND_SERVER"
              and s["status_message"]]
    assert client and server
    for span in client:  # checkoutservice's otelgrpc names it; the collector adds the number
        assert span["attributes"] == {"rpc.grpc.status_code": 400, "rpc.response.status_code": "CODE(400)"}
    for span in server:  # Node's instrumentation records the number as sent
        assert span["attributes"] == {"rpc.grpc.status_code": 400}
    for span in client + server:
        assert span["status"] == "STATUS_CODE_ERROR"  # otelgrpc client; Node server: any non-zero code
        assert span["status_message"] == f"Code(400): {desc}"
    assert _series(refusing, service_name="checkoutservice", span_kind="SPAN_KIND_CLIENT",
                   server_address="paymentservice", rpc_grpc_status_code="400", status_code="STATUS_CODE_ERROR")
    assert _series(refusing, service_name="paymentservice", span_kind="SPAN_KIND_SERVER",
                   rpc_grpc_status_code="400", status_code="STATUS_CODE_ERROR")
    assert not _series(refusing, service_name="paymentservice", rpc_grpc_status_code="3")
