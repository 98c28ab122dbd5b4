"""Orbit's durable state: checkpoint, agenda, incidents and the write-ahead action ledger.

The benchmark starts a fresh process per invocation (paper, Appendix G, Orbit: "Orbit reloads a
checkpoint, an agenda, its open incidents, and a durable action ledger from its workspace"), so
everything Orbit knows lives under `<workspace>/orbit/`:

* `checkpoint.json`: the invocation number that wrote it, id counters, which incident holds each
  alert, the budget ladder's memory (a refusal is remembered: the budget never comes back);
* `incidents.json` and `agenda.json`: the incidents (open and closed) and the agenda tasks;
* `ledger.jsonl`: one line per event, appended and fsync'ed: `intent` before an action runs,
  `outcome` after it, `recovered` when a later invocation settles an intent whose outcome never
  came (the process died in between).

JSON files are replaced atomically. An invocation that the runner abandoned at its budget may still
be running in a daemon thread while the next one starts; `save` therefore refuses to overwrite a
checkpoint written by a later invocation, so a stale invocation never clobbers a newer one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_marathon.agents.workspace import load_state, save_state

DIRECTORY = "orbit"


class StaleInvocation(RuntimeError):
    """A later invocation has written the checkpoint: this one must stop writing."""


@dataclass
class OrbitState:
    """Everything Orbit reloads at the start of an invocation."""

    n: int
    checkpoint: dict[str, Any]
    incidents: list[dict[str, Any]]
    agenda: list[dict[str, Any]]
    directory: Path
    ledger_events: list[dict[str, Any]] = field(default_factory=list)

    # lookups -----------------------------------------------------------------------------------
    def incident(self, incident_id: str) -> dict[str, Any] | None:
        return next((i for i in self.incidents if i["incident_id"] == incident_id), None)

    def open_incidents(self) -> list[dict[str, Any]]:
        return [i for i in self.incidents if not i.get("closed")]

    def task(self, task_id: str) -> dict[str, Any] | None:
        return next((t for t in self.agenda if t["task"] == task_id), None)

    def next_id(self, counter: str, prefix: str) -> str:
        number = int(self.checkpoint.setdefault("counters", {}).get(counter, 0)) + 1
        self.checkpoint["counters"][counter] = number
        return f"{prefix}-{number:04d}"

    @property
    def assigned(self) -> dict[str, str]:
        """alert id -> incident id, for every alert Orbit has ever placed."""
        return self.checkpoint.setdefault("assigned", {})

    # the write-ahead ledger --------------------------------------------------------------------
    def log(self, event: dict[str, Any]) -> None:
        """Append one ledger event and force it to disk before returning: an intent must be on
        disk before its action runs, or a crash could leave an action no later invocation knows."""
        self.directory.mkdir(parents=True, exist_ok=True)
        line = json.dumps(event, sort_keys=True) + "\n"
        with open(self.directory / "ledger.jsonl", "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        self.ledger_events.append(event)

    def pending_intents(self) -> list[dict[str, Any]]:
        """Intents with neither an outcome nor a recovery, in the order they were logged."""
        settled = {e["action_id"] for e in self.ledger_events if e.get("event") in {"outcome", "recovered"}}
        return [e for e in self.ledger_events if e.get("event") == "intent" and e["action_id"] not in settled]

    # persistence -------------------------------------------------------------------------------
    def save(self) -> None:
        """Write checkpoint, incidents and agenda, unless a later invocation already did."""
        on_disk = load_state(self.directory, "checkpoint.json", {})
        if int(on_disk.get("n", 0)) > self.n:
            raise StaleInvocation(
                f"invocation {self.n} is stale: invocation {on_disk['n']} already wrote the checkpoint"
            )
        self.checkpoint["n"] = self.n
        save_state(self.directory, "incidents.json", {"incidents": self.incidents})
        save_state(self.directory, "agenda.json", {"agenda": self.agenda})
        save_state(self.directory, "checkpoint.json", self.checkpoint)


def _ledger(directory: Path) -> Iterator[dict[str, Any]]:
    """Ledger events; a torn last line (the process died while writing it) is skipped."""
    path = directory / "ledger.jsonl"
    if not path.exists():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict) and isinstance(event.get("action_id"), str):
            yield event


def load(workspace: Path, n: int) -> OrbitState:
    """Reload Orbit's state for invocation `n` (empty state at the first invocation)."""
    directory = workspace / DIRECTORY
    checkpoint = load_state(directory, "checkpoint.json", {"n": 0, "counters": {}, "assigned": {}})
    incidents = load_state(directory, "incidents.json", {"incidents": []})["incidents"]
    agenda = load_state(directory, "agenda.json", {"agenda": []})["agenda"]
    if int(checkpoint.get("n", 0)) > n:
        raise StaleInvocation(f"invocation {n} is stale: invocation {checkpoint['n']} already wrote the state")
    return OrbitState(n, checkpoint, list(incidents), list(agenda), directory, list(_ledger(directory)))
