"""The boutique's request handlers behave as upstream microservices-demo v0.10.6 does, seen
through the twin's public API (probes, logs, traces)."""

from __future__ import annotations

import pytest

from pytest_marathon.backends import create_backend
from pytest_marathon.twin.engine import Twin


@pytest.fixture
def twin() -> Twin:
    backend = create_backend("boutique", seed=11)
    backend.advance_to(0.0)
    return backend


def test_cart_page_serves_with_recommendations_down(twin: Twin) -> None:
    """src/frontend/handlers.go viewCartHandler: "ignores the error retrieving recommendations
    since it is not critical" - a logged warning, and the page still renders (200)."""
    assert twin.scale("recommendationservice", 0).ok
    twin.advance_to(120.0)
    assert twin.probe({"kind": "request", "route": "view_cart"})
    warnings = twin.logs(service="frontend", level="warning",
                         contains="failed to get product recommendations", limit=5)
    assert warnings
    assert not twin.logs(service="frontend", level="error", contains="recommendation", limit=5)
