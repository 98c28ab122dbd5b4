"""Answering a run from a recording: matching requests to recorded exchanges, and saying where a
run parted from the one recorded.

A request is matched by its method, route and canonical body: the k-th identical request of the
run gets the k-th identical recorded answer, so an agent that sends the same question twice gets
both answers in order. A request with no recorded answer left is a mismatch, described against
the request recorded at the same position (invocation n, request k) by the first JSON path where
the two differ; so is a recorded request the run did not make by the end of its invocation.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

from pytest_marathon.metering.recording import Exchange, Recording, canonical

_CLIP = 60
#: Characters of a long string shown before the place where it differs.
_CONTEXT = 12


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= _CLIP else text[: _CLIP - 3] + "..."


def _step(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if str(key).isidentifier() else f"{path}[{json.dumps(key)}]"


def first_difference(recorded: Any, sent: Any, path: str = "$") -> str | None:
    """Where two JSON values first differ ("$.input[0].content: recorded "a", sent "b""), keys
    in sorted order and list items by index; None when they are equal."""
    if isinstance(recorded, Mapping) and isinstance(sent, Mapping):
        for key in sorted(set(recorded) | set(sent), key=str):
            where = _step(path, key)
            if key not in sent:
                return f"{where}: recorded {_show(recorded[key])}, not sent"
            if key not in recorded:
                return f"{where}: not recorded, sent {_show(sent[key])}"
            found = first_difference(recorded[key], sent[key], where)
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(sent, list):
        for index, (old, new) in enumerate(zip(recorded, sent)):
            found = first_difference(old, new, _step(path, index))
            if found is not None:
                return found
        if len(recorded) != len(sent):
            return f"{path}: recorded {len(recorded)} items, sent {len(sent)}"
        return None
    if canonical(recorded) == canonical(sent):
        return None
    if isinstance(recorded, str) and isinstance(sent, str):
        same = len(_common_prefix(recorded, sent))
        if same > _CONTEXT:  # long texts that part late: show them from where they part
            start = same - _CONTEXT
            return (
                f"{path} from character {start}: recorded {_show(recorded[start:])}, "
                f"sent {_show(sent[start:])}"
            )
    return f"{path}: recorded {_show(recorded)}, sent {_show(sent)}"


def _common_prefix(a: str, b: str) -> str:
    for index, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return a[:index]
    return a[: min(len(a), len(b))]


def _request_difference(recorded: Mapping[str, Any], sent: Mapping[str, Any]) -> str:
    if "json" in recorded and "json" in sent:
        return first_difference(recorded["json"], sent["json"]) or "the same body"
    return "the body differs (not JSON)"


class Replayer:
    """The recorded answers of one run, handed out by request; thread-safe."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self._lock = threading.Lock()
        self._answers: dict[tuple[str, str, str], deque[Exchange]] = {}
        self._at: dict[tuple[int, int], Exchange] = {}
        self._unused: dict[tuple[int, int], Exchange] = {}
        for exchange in recording.exchanges:
            self._answers.setdefault(exchange.key, deque()).append(exchange)
            self._at[(exchange.n, exchange.k)] = exchange
            self._unused[(exchange.n, exchange.k)] = exchange

    def take(
        self, n: int, k: int, method: str, route: str, request: Mapping[str, Any]
    ) -> Exchange | str:
        """The recorded answer to this request, or the one-line mismatch."""
        key = (method, route, canonical(request))
        with self._lock:
            queue = self._answers.get(key)
            if queue:
                exchange = queue.popleft()
                self._unused.pop((exchange.n, exchange.k), None)
                return exchange
            there = self._at.get((n, k))
        where = f"model replay: invocation {n}, request {k} ({method} {route})"
        if there is None:
            return f"{where} is not in the recording {self.recording.path.name}"
        if (there.method, there.route) != (method, route):
            return f"{where} differs from the recording: recorded {there.method} {there.route}"
        if there.key == key:
            return f"{where}: the recording has fewer identical requests than this run sent"
        return f"{where} differs from the recording at {_request_difference(there.request, request)}"

    def missed(self, n: int) -> str | None:
        """The first recorded request of invocations up to `n` that the run has not made, as a
        one-line mismatch; None when every one was made."""
        with self._lock:
            left = sorted(position for position in self._unused if position[0] <= n)
            if not left:
                return None
            exchange = self._unused[left[0]]
        return (
            f"model replay: invocation {exchange.n}, request {exchange.k} ({exchange.method} "
            f"{exchange.route}) is in the recording but the run did not send it"
        )
