"""Reading what a model call cost from the provider's own answer, in each wire format.

The tokens are the provider's numbers, taken from the response the agent receives, so they are
neither estimated nor self-reported: a JSON response's `usage`, or in a stream the events that
carry it (Responses: `response.completed`/`incomplete`/`failed`; Chat Completions: the final
chunk of `stream_options.include_usage`; Anthropic Messages: `message_start`, then the running
totals of `message_delta`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pytest_marathon.metering.prices import TokenCounts

Flavor = Literal["responses", "chat", "anthropic"]

_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _details(usage: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = usage.get(key)
    return value if isinstance(value, Mapping) else {}


def tokens_of(flavor: Flavor, usage: Any) -> TokenCounts | None:
    """Normalised tokens of one `usage` object of the given wire format (None when absent)."""
    if not isinstance(usage, Mapping):
        return None
    if flavor == "responses":
        return TokenCounts(
            input_tokens=_int(usage.get("input_tokens")),
            output_tokens=_int(usage.get("output_tokens")),
            cached_input_tokens=_int(_details(usage, "input_tokens_details").get("cached_tokens")),
        )
    if flavor == "chat":
        return TokenCounts(
            input_tokens=_int(usage.get("prompt_tokens")),
            output_tokens=_int(usage.get("completion_tokens")),
            cached_input_tokens=_int(_details(usage, "prompt_tokens_details").get("cached_tokens")),
        )
    read = _int(usage.get("cache_read_input_tokens"))
    written = _int(usage.get("cache_creation_input_tokens"))
    return TokenCounts(  # Anthropic's input_tokens excludes the cached parts
        input_tokens=_int(usage.get("input_tokens")) + read + written,
        output_tokens=_int(usage.get("output_tokens")),
        cached_input_tokens=read,
        cache_write_tokens=written,
    )


def usage_of_body(flavor: Flavor, body: Any) -> tuple[str | None, TokenCounts | None]:
    """(model, tokens) of a complete JSON response."""
    if not isinstance(body, Mapping):
        return None, None
    model = body.get("model") if isinstance(body.get("model"), str) else None
    return model, tokens_of(flavor, body.get("usage"))


@dataclass
class SseEvent:
    raw: bytes
    data: Any  # the parsed JSON of its `data:` lines; None for `[DONE]`, comments or non-JSON


def split_events(buffer: bytearray) -> Iterator[SseEvent]:
    """Take every complete event off the front of `buffer` (its bytes kept verbatim, delimiter
    included), leaving an incomplete tail for the next network chunk."""
    while True:
        match = _EVENT_END.search(buffer)
        if match is None:
            return
        raw = bytes(buffer[: match.end()])
        del buffer[: match.end()]
        yield SseEvent(raw, _data_of(raw[: match.start()]))


def _data_of(block: bytes) -> Any:
    lines = block.decode("utf-8", errors="replace").splitlines()
    data = "\n".join(
        line[5:].removeprefix(" ") for line in lines if line.startswith("data:")
    )
    if not data or data == "[DONE]":
        return None
    try:
        return json.loads(data)
    except json.JSONDecodeError:
        return None


class StreamUsage:
    """Accumulates a stream's model and tokens event by event; `hide(event)` says whether an
    event exists only because the proxy asked for usage (the Chat Completions usage chunk the
    client did not request), so the client receives exactly the stream it asked for."""

    def __init__(self, flavor: Flavor, *, hide_usage_chunk: bool = False) -> None:
        self.flavor = flavor
        self.model: str | None = None
        self.tokens: TokenCounts | None = None
        self._hide_usage_chunk = hide_usage_chunk
        self._anthropic: dict[str, Any] = {}

    def feed(self, data: Any) -> bool:
        """Read one event's data; True when the event must not be passed to the client."""
        if not isinstance(data, Mapping):
            return False
        if self.flavor == "responses":
            response = data.get("response")
            if isinstance(response, Mapping):
                if isinstance(response.get("model"), str):
                    self.model = response["model"]
                if data.get("type") in (
                    "response.completed",
                    "response.incomplete",
                    "response.failed",
                ) and isinstance(response.get("usage"), Mapping):
                    self.tokens = tokens_of("responses", response["usage"])
            return False
        if self.flavor == "chat":
            if isinstance(data.get("model"), str):
                self.model = data["model"]
            if isinstance(data.get("usage"), Mapping):
                self.tokens = tokens_of("chat", data["usage"])
                return self._hide_usage_chunk and not data.get("choices")
            return False
        kind = data.get("type")
        if kind == "message_start" and isinstance(data.get("message"), Mapping):
            message = data["message"]
            if isinstance(message.get("model"), str):
                self.model = message["model"]
            if isinstance(message.get("usage"), Mapping):
                self._anthropic.update(message["usage"])
        elif kind == "message_delta" and isinstance(data.get("usage"), Mapping):
            # running totals: a field present here replaces the one of message_start
            self._anthropic.update(
                {k: v for k, v in data["usage"].items() if v is not None}
            )
        if self._anthropic:
            self.tokens = tokens_of("anthropic", self._anthropic)
        return False
