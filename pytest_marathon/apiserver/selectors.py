"""Label and field selectors, as list and watch requests carry them.

Label selector grammar: k8s.io/apimachinery pkg/labels/selector.go (`=`, `==`, `!=`, `in`,
`notin`, `k`, `!k`, comma = and). Field selectors: pkg/fields/selector.go (`=`, `==`, `!=` on a
dotted path such as `metadata.name`, `involvedObject.uid`, `spec.nodeName`). A selector the
server cannot parse is a 400, as upstream answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pytest_marathon.apiserver.status import bad_request

Matcher = Callable[[dict[str, Any]], bool]
_SET = re.compile(r"^\s*(!?)([A-Za-z0-9./_-]+)\s*(?:\s(in|notin)\s*\(([^)]*)\))?\s*$")


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses (`a in (x,y),b=c`)."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        current += ch
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def label_matcher(text: str | None) -> Matcher:
    if not text:
        return lambda obj: True
    checks: list[Callable[[dict[str, str]], bool]] = []
    for term in _split(text):
        for op in ("!=", "==", "="):
            if op in term:
                key, _, value = (s.strip() for s in term.partition(op))
                if op == "!=":
                    checks.append(lambda labels, k=key, v=value: labels.get(k) != v)
                else:
                    checks.append(lambda labels, k=key, v=value: labels.get(k) == v)
                break
        else:
            m = _SET.match(term)
            if not m:
                raise bad_request(f"unable to parse requirement: {term!r}")
            negate, key, op, values = m.groups()
            if op:
                wanted = {v.strip() for v in values.split(",")}
                if op == "in":
                    checks.append(lambda labels, k=key, w=wanted: labels.get(k) in w)
                else:
                    checks.append(lambda labels, k=key, w=wanted: labels.get(k) not in w)
            elif negate:
                checks.append(lambda labels, k=key: k not in labels)
            else:
                checks.append(lambda labels, k=key: k in labels)
    return lambda obj: all(check(obj.get("metadata", {}).get("labels") or {}) for check in checks)


def field_matcher(text: str | None) -> Matcher:
    if not text:
        return lambda obj: True
    checks: list[Matcher] = []
    for term in _split(text):
        for op in ("!=", "==", "="):
            if op in term:
                path, _, value = (s.strip() for s in term.partition(op))
                break
        else:
            raise bad_request(f"invalid field selector: {term!r}")
        keys = path.split(".")
        if op == "!=":
            checks.append(lambda obj, k=keys, v=value: _field(obj, k) != v)
        else:
            checks.append(lambda obj, k=keys, v=value: _field(obj, k) == v)
    return lambda obj: all(check(obj) for check in checks)


def _field(obj: Any, keys: list[str]) -> str:
    for key in keys:
        if not isinstance(obj, dict):
            return ""
        obj = obj.get(key)
    return "" if obj is None else str(obj)
