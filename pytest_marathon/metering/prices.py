"""The price table model calls are charged at: USD per million tokens, per model.

A run's dollars are computed here from the tokens the proxy measured, never taken from what an
agent says it spent, so two agents are compared at the same prices. The table is data
(`prices.yaml`, or the user's file in the same format) and its digest goes into the manifest,
because the same tokens at other prices are another cost.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from pytest_marathon import yamlio

PRICE_FIELDS = ("input", "cached_input", "cache_write", "output")
#: The entry that prices every model a table does not list (none in the built-in table).
ANY_MODEL = "*"
#: A dated snapshot or alias of a listed model: `gpt-4o-2024-08-06`, `claude-3-5-haiku-20241022`,
#: `claude-sonnet-4-5-latest`.
_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


class PriceTableError(ValueError):
    """A price table that cannot be used; the message names the file and the bad entry."""


@dataclass(frozen=True)
class TokenCounts:
    """Tokens of one or more model calls, normalised across wire formats.

    `input_tokens` is every input token (uncached, cache reads and cache writes alike), so it is
    comparable between OpenAI (whose input counts include the cached part) and Anthropic (whose
    `input_tokens` excludes it); `cached_input_tokens` and `cache_write_tokens` are parts of it.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True)
class ModelPrice:
    input: float
    output: float
    cached_input: float
    cache_write: float

    def cost(self, tokens: TokenCounts) -> float:
        cached = min(tokens.cached_input_tokens, tokens.input_tokens)
        written = min(tokens.cache_write_tokens, tokens.input_tokens - cached)
        plain = tokens.input_tokens - cached - written
        return (
            plain * self.input
            + cached * self.cached_input
            + written * self.cache_write
            + tokens.output_tokens * self.output
        ) / 1_000_000


@dataclass(frozen=True)
class PriceTable:
    models: Mapping[str, ModelPrice]
    #: sha256 of the table's canonical JSON: comments and layout do not change it, a price does.
    digest: str
    source: str

    def price_of(self, model: str | None) -> ModelPrice | None:
        """The model's price: its exact name, else its name without a date or `-latest`
        suffix, else the table's `"*"` entry; None when unlisted (a prefix is not enough:
        `gpt-4.1-nano` is not `gpt-4.1`)."""
        if not model:
            return None
        name = model.strip().lower()
        if name in self.models:
            return self.models[name]
        base = _SUFFIX.sub("", name)
        return self.models.get(base) or self.models.get(ANY_MODEL)

    def cost(self, model: str | None, tokens: TokenCounts) -> float | None:
        """Dollars for these tokens of this model; None when the model is not priced."""
        price = self.price_of(model)
        return None if price is None else price.cost(tokens)


def load_price_table(path: str | Path | None = None) -> PriceTable:
    """The user's table at `path` (it replaces the built-in one), else `prices.yaml`."""
    if path is None:
        text = resources.files("pytest_marathon.metering").joinpath("prices.yaml").read_text("utf-8")
        source = "built-in"
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise PriceTableError(f"price table {path}: cannot read it: {exc}") from None
        source = str(path)
    try:
        data = yamlio.safe_load(text)
    except yaml.YAMLError as exc:
        raise PriceTableError(f"price table {source}: not YAML: {exc}") from None
    return parse_price_table(data, source)


def parse_price_table(data: Any, source: str = "<data>") -> PriceTable:
    models = data.get("models") if isinstance(data, Mapping) else None
    if not isinstance(models, Mapping) or not models:
        raise PriceTableError(
            f"price table {source}: expected a mapping `models:` of model name -> "
            "{input, output[, cached_input, cache_write]} (USD per million tokens)"
        )
    parsed: dict[str, ModelPrice] = {}
    canonical: dict[str, dict[str, float]] = {}
    for name, entry in models.items():
        if not isinstance(entry, Mapping):
            raise PriceTableError(f"price table {source}: model {name!r}: expected a mapping")
        unknown = sorted(set(map(str, entry)) - set(PRICE_FIELDS))
        if unknown:
            raise PriceTableError(
                f"price table {source}: model {name!r}: unknown field(s) {', '.join(unknown)}; "
                f"fields are {', '.join(PRICE_FIELDS)}"
            )
        values: dict[str, float] = {}
        for field in PRICE_FIELDS:
            if field not in entry:
                if field in ("input", "output"):
                    raise PriceTableError(f"price table {source}: model {name!r}: no {field!r} price")
                continue
            value = entry[field]
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise PriceTableError(
                    f"price table {source}: model {name!r}: {field} must be a number >= 0, "
                    f"got {value!r}"
                )
            values[field] = float(value)
        key = str(name).strip().lower()
        canonical[key] = values
        parsed[key] = ModelPrice(
            input=values["input"],
            output=values["output"],
            cached_input=values.get("cached_input", values["input"]),
            cache_write=values.get("cache_write", values["input"]),
        )
    blob = json.dumps(canonical, sort_keys=True, separators=(",", ":")).encode()
    return PriceTable(parsed, hashlib.sha256(blob).hexdigest(), source)
