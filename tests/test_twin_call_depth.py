"""A service that reaches itself through `ctx.call` fails with a gRPC error, as a real call loop
ends (no call has a deadline, so the request's cancellation ends it when the client gives up),
instead of exhausting the simulator's own stack."""

from __future__ import annotations

import difflib

from pytest_marathon.backends import create_backend
from pytest_marathon.twin.engine import Twin

FORWARD = "def Convert(ctx, request):\n"
FORWARDING = (
    "def Convert(ctx, request):\n"
    "    via = ctx.env('CONVERT_VIA')\n"
    "    if via:\n"
    "        return ctx.call(via, 'Convert', request)\n"
)


def _forwarding_currencyservice(twin: Twin) -> None:
    """Deploy a currencyservice that forwards Convert to the address in CONVERT_VIA, then point
    that address at currencyservice itself (a misconfiguration that makes a call loop)."""
    source = twin.source("currencyservice", path="service.py")["service.py"]
    patched = source.replace(FORWARD, FORWARDING, 1)
    assert patched != source
    diff = "".join(difflib.unified_diff(source.splitlines(keepends=True), patched.splitlines(keepends=True),
                                        fromfile="a/service.py", tofile="b/service.py"))
    built = twin.release("currencyservice", patch=diff, change_cause="forward conversions")
    assert built.ok, built.message
    looped = twin.release("currencyservice", env={"CONVERT_VIA": "currencyservice:7000"},
                          change_cause="forward conversions to the pricing proxy")
    assert looped.ok, looped.message


def _codes(twin: Twin, metric: str, **labels: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for series in twin.store.series(metric):
        found = series.labels
        if all(found.get(k) == v for k, v in labels.items()):
            code = found["rpc_grpc_status_code"]
            out[code] = out.get(code, 0.0) + series.values[-1]
    return out


def test_self_calling_service_fails_when_the_request_is_cancelled_not_recursion() -> None:
    twin = create_backend("boutique", seed=5)
    twin.advance_to(0.0)
    _forwarding_currencyservice(twin)
    twin.advance_to(240.0)  # real traffic reaches Convert through the frontend and checkout
    assert not twin.probe({"kind": "rpc", "service": "currencyservice", "method": "Convert",
                           "request": {"from": {"currency_code": "USD", "units": 1, "nanos": 0},
                                       "to_code": "EUR"}})
    convert = "hipstershop.CurrencyService/Convert"
    served = _codes(twin, "traces_span_metrics_calls_total", service_name="currencyservice",
                    span_kind="SPAN_KIND_SERVER", span_name=convert)
    assert served.get("1", 0.0) > 0, served  # CANCELLED, counted on every hop of the loop
    called = _codes(twin, "traces_span_metrics_calls_total", service_name="frontend",
                    server_address="currencyservice", span_name=convert)
    assert called.get("1", 0.0) > 0, called
    loops = [t for t in twin.traces(service="currencyservice", errors_only=True, limit=50)]
    assert loops
    deepest = max(sum(1 for s in twin.trace(t["trace_id"])["spans"]
                      if s["service"] == "currencyservice" and s["kind"] == "SPAN_KIND_SERVER") for t in loops)
    assert 2 < deepest <= 16  # the loop ran several hops and then stopped at the depth cap
