"""Kubernetes events, coalesced the way the API server does (same object+reason+message → count)."""

from __future__ import annotations

from typing import Any

from pytest_marathon.twin.objects import Event


class EventLog:
    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self._events: list[Event] = []
        self._open: dict[tuple[str, str, str], Event] = {}

    def add(self, t: float, type_: str, reason: str, kind: str, name: str, message: str) -> None:
        key = (name, reason, message)
        existing = self._open.get(key)
        if existing is not None and t - existing.last_t <= 600:
            existing.count += 1
            existing.last_t = t
            return
        event = Event(t, type_, reason, kind, name, message, 1, t)
        self._events.append(event)
        self._open[key] = event

    def query(
        self, *, since: float | None = None, object_name: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """Newest `limit` matching events, oldest first; a prefix matches a workload's pods."""
        found = [
            e
            for e in self._events
            if (since is None or e.last_t >= since)
            and (object_name is None or e.name == object_name or e.name.startswith(object_name + "-"))
        ]
        found.sort(key=lambda e: (e.last_t, e.t))
        return [dict(e.to_k8s(self.namespace), t=e.last_t) for e in found[-limit:]] if limit > 0 else []

    def all(self) -> list[Event]:
        return list(self._events)
