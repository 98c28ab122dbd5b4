"""What a headless coding CLI said about one run, read from its JSON event stream.

The presets need three things from a CLI's output: the final answer (it ends with the incident
block), the counts it reports (the fallback usage when no metering proxy measures the run) and,
when it failed, its own failure message, which names the cause where a tail of stderr does not.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any


def json_events(text: str) -> Iterator[Mapping[str, Any]]:
    """The JSON objects of a JSON-lines event stream, in order; a line that is not one (a CLI's
    stray log line, a cut last line) is skipped rather than ending the reading."""
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, Mapping):
            yield event


@dataclass(frozen=True)
class CliAnswer:
    text: str = ""
    model_calls: int = 0  # model requests, as far as the CLI's events show them
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    failure: str = ""  # the CLI's failure message; empty when it reported none
    tool_calls: int = 0  # calls of the benchmark's MCP tools
