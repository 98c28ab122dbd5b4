"""Keeping tool answers small and honest: pages, cut text, explicit truncation notices.

Agents drown in noisy output and models pay per token, so every answer is bounded; whatever is
left out is said, with the way to get the rest (the next page, a narrower filter).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any


def page(items: Sequence[Any], offset: int, limit: int, key: str = "items") -> dict[str, Any]:
    """One page of a fully known list, with `total` and the offset of the next page (or null)."""
    chunk = list(items[offset : offset + limit])
    following = offset + len(chunk)
    return {
        "total": len(items),
        "offset": offset,
        "next_offset": following if following < len(items) else None,
        key: chunk,
    }


def clip(text: str, limit: int) -> str:
    """Text cut to `limit` characters; a cut says how much was dropped."""
    if len(text) <= limit:
        return text
    return text[:limit] + f" …[{len(text) - limit} more chars cut]"


def finite(value: float) -> float | str:
    """A JSON-safe sample value: non-finite floats spelled as Prometheus' HTTP API spells them."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return round(value, 6)


def dumps(result: Any) -> str:
    """The canonical text of a result: what MCP sends and what `result_chars` measures."""
    return json.dumps(result, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
