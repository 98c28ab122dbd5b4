"""Orbit's memory across invocations: a bounded charter of lessons and procedural recipes.

Paper, Appendix G, Orbit: before yielding, Orbit "appends at most three lessons to a bounded
charter, and promotes a repair recipe to procedural memory only once the incident it resolved has
validated green".

* The charter (`orbit/lessons.json`) holds at most `CHARTER_LIMIT` lessons; an invocation appends
  at most three (what the model's `finish` gives), and the oldest drop out first. The operating
  charter itself is fixed text (`prompts/orbit/charter.md`); these lessons are shown beside it.
* A recipe (`orbit/recipes.json`) is the action that preceded a green validation: the alert rule
  names of the incident, the tool and its arguments (service-bound arguments kept, the incident id
  dropped). A recipe is written only when the incident closed green and one of its actions had
  succeeded, never on the model's say-so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_marathon.agents.labels import alert_id_of
from pytest_marathon.agents.workspace import load_state, save_state

CHARTER_LIMIT = 20
RECIPE_LIMIT = 30
LESSONS_PER_INVOCATION = 3


def lessons(directory: Path) -> list[str]:
    return [str(x) for x in load_state(directory, "lessons.json", {"lessons": []})["lessons"]]


def append_lessons(directory: Path, new: Sequence[str], n: int) -> list[str]:
    """Append at most three lessons (each once) and keep the newest CHARTER_LIMIT."""
    kept = lessons(directory)
    for lesson in list(new)[:LESSONS_PER_INVOCATION]:
        line = f"(invocation {n}) {lesson}"
        if lesson and not any(existing.endswith(f") {lesson}") for existing in kept):
            kept.append(line)
    kept = kept[-CHARTER_LIMIT:]
    save_state(directory, "lessons.json", {"lessons": kept})
    return kept


def recipes(directory: Path) -> list[dict[str, Any]]:
    return list(load_state(directory, "recipes.json", {"recipes": []})["recipes"])


def promote(
    directory: Path, green: Sequence[Mapping[str, Any]], alerts: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Recipes from incidents that validated green after a successful action; returns the new ones."""
    by_id = {alert_id_of(a): a for a in alerts}
    known = recipes(directory)
    added = []
    for incident in green:
        done = [a for a in incident.get("actions", []) if a.get("ok") and a.get("tool") != "report_incidents"]
        if not done:
            continue
        action = done[-1]
        recipe = {
            "alertnames": sorted({str(by_id[a].get("alertname", "")) for a in incident["alert_ids"] if a in by_id}),
            "tool": action["tool"],
            "arguments": {k: v for k, v in sorted(action["arguments"].items()) if k != "incident_id"},
            "from_incident": incident["incident_id"],
        }
        if any((r["alertnames"], r["tool"], r["arguments"]) == (recipe["alertnames"], recipe["tool"], recipe["arguments"])
               for r in known):
            continue
        known.append(recipe)
        added.append(recipe)
    if added:
        save_state(directory, "recipes.json", {"recipes": known[-RECIPE_LIMIT:]})
    return added
