"""Pieces every catalog generator shares: how an entry file is written (scope kept across
regeneration), the Chaos Toolkit experiment of a direct fault, the agent-tool remedies, and the
writer that rewrites only what the previous run generated (its manifest, `generated.txt`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml


def next_patch(tag: str) -> str:
    """The release after `tag` (v0.10.6 -> v0.10.7): a tag the registry has never seen."""
    head, _, patch = tag.rpartition(".")
    return f"{head}.{int(patch) + 1}"


def rollback(service: str) -> list[dict[str, Any]]:
    return [{"tool": "rollback_service", "args": {"service": service}}]


def restart(service: str) -> list[dict[str, Any]]:
    return [{"tool": "restart_service", "args": {"service": service}}]


def experiment(title: str, kind: str, target: str, **params: Any) -> dict[str, Any]:
    module = "pytest_marathon.faults.chaos_actions"
    return {
        "title": title,
        "description": title,
        "configuration": {},
        "method": [
            {
                "type": "action",
                "name": f"start-{kind}",
                "provider": {
                    "type": "python",
                    "module": module,
                    "func": "start_fault",
                    "arguments": {"kind": kind, "target": target, **params},
                },
            }
        ],
        "rollbacks": [
            {
                "type": "action",
                "name": f"stop-{kind}",
                "provider": {"type": "python", "module": module, "func": "stop_fault"},
            }
        ],
    }


def entry_text(doc: dict[str, Any], scope: list[str] | None) -> str:
    """An entry file, with the scope admission measured (kept across regeneration) last and on
    one line, as `validate-catalog --write-scope` writes it, so neither tool rewrites the other."""
    text = yaml.safe_dump(doc, sort_keys=False, width=100)
    return text + ("scope: [" + ", ".join(scope) + "]\n" if scope else "")



class Writer:
    """Writes entries (and experiments) into `out`, keeping the scope admission measured for an
    entry of the same id, and lists what it wrote in the manifest so the next run removes
    entries whose template is gone."""

    def __init__(self, out: Path, scopes: dict[str, list[str]]) -> None:
        self.out = out
        self.scopes = scopes
        self.written: list[str] = []
        # entry id -> why admission rejects it: a template's instance that is no fault on this app
        self.excluded: dict[str, str] = {}
        # services no load task reaches: no template writes an entry that targets one
        self.unreached: set[str] = set()

    @classmethod
    def start(cls, out: Path) -> Writer:
        (out / "experiments").mkdir(parents=True, exist_ok=True)
        (out / "patches").mkdir(parents=True, exist_ok=True)
        scopes: dict[str, list[str]] = {}
        manifest = out / "generated.txt"
        if manifest.exists():
            for entry_id in manifest.read_text().split():
                old = out / f"{entry_id}.yaml"
                if old.exists() and (scope := yaml.safe_load(old.read_text()).get("scope")):
                    scopes[entry_id] = scope
                old.unlink(missing_ok=True)
                (out / "experiments" / f"{entry_id}.json").unlink(missing_ok=True)
                (out / "patches" / f"{entry_id}.diff").unlink(missing_ok=True)
        return cls(out, scopes)

    def entry(self, entry_id: str, body: dict[str, Any], chaos: dict[str, Any] | None = None) -> None:
        if entry_id in self.written:
            raise ValueError(f"two templates write {entry_id}")
        if entry_id in self.excluded or body.get("target") in self.unreached:
            (self.out / "patches" / f"{entry_id}.diff").unlink(missing_ok=True)
            return
        if chaos is not None:
            (self.out / "experiments" / f"{entry_id}.json").write_text(json.dumps(chaos, indent=2, sort_keys=True) + "\n")
            body["injection"] = {"experiment": f"experiments/{entry_id}.json"}
        (self.out / f"{entry_id}.yaml").write_text(entry_text({"id": entry_id, **body}, self.scopes.get(entry_id)))
        self.written.append(entry_id)

    def finish(self) -> None:
        (self.out / "generated.txt").write_text("\n".join(sorted(self.written)) + "\n")
