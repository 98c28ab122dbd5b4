"""Pinned against open-telemetry/opentelemetry-demo 2.2.0 src/quote/app/routes.php."""

from testing import TestContext

import service


def quoted(ctx, items):
    """POST /getquote as shipping sends it (quote.rs: `{"numberOfItems": <u32>}`)."""
    return service.getquote(ctx, {"body": {"numberOfItems": items}})


def test_quote_is_899_per_item_rounded():
    ctx = TestContext()
    assert quoted(ctx, 3) == 26.97
    assert ctx.logged("info") == ["Calculated quote total=26.97"]


def test_missing_field_answers_zero_with_200():
    ctx = TestContext()
    assert service.getquote(ctx, {"body": {"items": 3}}) == 0.0
    assert service.getquote(ctx, {"body": None}) == 0.0


def test_intval_of_strings():
    assert quoted(TestContext(), "4") == 35.96
    assert quoted(TestContext(), "two") == 0.0
