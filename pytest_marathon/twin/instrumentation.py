"""What each service's OpenTelemetry instrumentation records about a gRPC call.

The span status a call ends with is the instrumentation library's choice, not the protocol's, and
the libraries the app's languages use disagree on the server side:

- Go, otelgrpc v0.69.0 (`src/frontend/go.mod` and `src/checkoutservice/go.mod` of
  GoogleCloudPlatform/microservices-demo v0.10.6): client spans are errors for every non-OK code;
  server spans only for the server-fault codes below (open-telemetry/opentelemetry-go-contrib
  `instrumentation/google.golang.org/grpc/otelgrpc/interceptor.go` `serverStatus`), as semantic
  conventions v1.37.0 `docs/rpc/grpc.md` ("gRPC Status") asks.
- Python, opentelemetry-instrumentation-grpc (recommendationservice, emailservice): the same rule
  (open-telemetry/opentelemetry-python-contrib
  `instrumentation/opentelemetry-instrumentation-grpc/src/opentelemetry/instrumentation/grpc/_utilities.py`
  `_server_status`).
- Node.js, @opentelemetry/instrumentation-grpc (currencyservice, paymentservice): every status but
  0 is an error on both sides, whatever the number, 400 included (open-telemetry/opentelemetry-js
  `experimental/packages/opentelemetry-instrumentation-grpc/src/utils.ts`
  `_grpcStatusCodeToOpenTelemetryStatusCode`, used by `serverUtils.ts`).

Which services are instrumented at all is the app's (`traced` in the app spec): upstream v0.10.6
traces neither cartservice, shippingservice nor adservice, so only their callers' client spans
show calls to them.
"""

from __future__ import annotations

from pytest_marathon.twin.errors import code_number

#: gRPC codes that make a server span an error under semconv's rule (otelgrpc `serverStatus`,
#: Python `_server_status`).
SERVER_ERROR_CODES = frozenset({"UNKNOWN", "DEADLINE_EXCEEDED", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS"})
#: Server instrumentations that mark every non-OK status as an error.
EVERY_CODE_IS_A_SERVER_ERROR = frozenset({"nodejs"})
ERROR = "STATUS_CODE_ERROR"
UNSET = "STATUS_CODE_UNSET"


def grpc_span_status(kind: str, code: str, language: str) -> str:
    """The span status the instrumentation of a `language` service gives a gRPC span of `kind`
    (`SPAN_KIND_CLIENT` / `SPAN_KIND_SERVER`) that ended with status `code`."""
    if code == "OK":
        return UNSET
    if kind == "SPAN_KIND_CLIENT" or language in EVERY_CODE_IS_A_SERVER_ERROR:
        return ERROR
    return ERROR if code in SERVER_ERROR_CODES else UNSET


#: Languages whose instrumentation names the status `rpc.response.status_code`, a string.
STRING_STATUS_LANGUAGES = frozenset({"go"})


def grpc_attributes(code: str, language: str) -> dict[str, int | str]:
    """The status attributes a span carries once the shipped collector has seen it.

    Python's and Node's instrumentations set `rpc.grpc.status_code`, the number as received
    (grpc-go and grpc-js pass a number outside the table through as is). Go's otelgrpc v0.69.0
    sets only `rpc.response.status_code`, the canonical name or `CODE(n)` (otelgrpc
    `stats_handler.go` `canonicalString`); the collector's `transform/rpc_status` processor
    (`deploy/otel-collector.yaml`) adds the number from it, so every span carries the number the
    span metrics and the rules read."""
    attributes: dict[str, int | str] = {"rpc.grpc.status_code": code_number(code)}
    if language in STRING_STATUS_LANGUAGES:
        attributes["rpc.response.status_code"] = canonical_status(code)
    return attributes


def canonical_status(code: str) -> str:
    """otelgrpc's text for a status: the code's name, or `CODE(n)` for a number outside the table."""
    return f"CODE({code_number(code)})" if code.startswith("Code(") else code
