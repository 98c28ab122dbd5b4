"""The incident JSON block an external agent's answer must end with (paper, Appendix G).

Models wrap JSON in prose and code fences and sometimes emit a bare list; the adapter accepts the
last fenced ```json block, else the last JSON value the text ends with, as `{"incidents": [...]}`
or a bare list. Anything else is an error naming what was wrong.
"""

from __future__ import annotations

import json
import re
from typing import Any

FENCED = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)
INCIDENT_KEYS = {"incident_id", "alert_ids", "status", "root_cause"}


def _last_json_value(text: str) -> Any:
    fenced = FENCED.findall(text)
    if fenced:
        return json.loads(fenced[-1])
    decoder = json.JSONDecoder()
    stripped = text.rstrip()
    for start in [i for i, ch in enumerate(stripped) if ch in "{["]:
        try:
            value, end = decoder.raw_decode(stripped, start)
        except json.JSONDecodeError:
            continue
        if end == len(stripped):
            return value
    raise ValueError("the answer does not end with an incident JSON block")


def parse_incident_block(text: str) -> list[dict[str, Any]]:
    """The incidents of the final block, keys limited to what report_incidents accepts."""
    if not text.strip():
        raise ValueError("the agent gave no answer (no incident JSON block)")
    try:
        value = _last_json_value(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the incident JSON block is not valid JSON: {exc}") from exc
    incidents = value.get("incidents") if isinstance(value, dict) else value
    if not isinstance(incidents, list):
        raise ValueError('the incident block must be {"incidents": [...]} or a list')
    parsed = []
    for i, item in enumerate(incidents):
        if not isinstance(item, dict) or not isinstance(item.get("incident_id"), str):
            raise ValueError(f"incident block item {i} needs a string incident_id")
        parsed.append({k: v for k, v in item.items() if k in INCIDENT_KEYS})
    return parsed
