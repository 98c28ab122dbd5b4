"""The Runbook's rule table (paper, Appendix G, Table 6): alert rule -> scripted action + category.

The table is data (`runbook_table.yaml`) so a reader can audit which alert triggers which action
without reading code. Rows are in priority order: when an incident's alerts fire several rules the
first listed row wins, which is how "a rule naming the broken object wins over a symptom rule" is
encoded. Rule names carrying an application prefix take the row of their unprefixed name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from pytest_marathon.vocabulary import CATEGORIES

ACTIONS = ("rollback", "scale_up", "restart")

# What each scripted action blames: the thing the action changes.
ARTIFACT_OF_ACTION = {"rollback": "image:{svc}", "scale_up": "replicas:{svc}", "restart": "pod:{svc}"}


@dataclass(frozen=True)
class Row:
    """One line of the table; `priority` is its position (0 = first listed = strongest)."""

    rule: str
    action: str
    category: str
    priority: int
    why: str = ""

    def artifact(self, workload: str) -> str:
        return ARTIFACT_OF_ACTION[self.action].format(svc=workload)


@dataclass(frozen=True)
class RemedyTable:
    rows: tuple[Row, ...]
    default: Row
    prefixes: tuple[str, ...]

    def row_for(self, alertname: str) -> Row:
        """The row of a rule name (exact, else its unprefixed name), else the default row."""
        by_rule = {row.rule: row for row in self.rows}
        if alertname in by_rule:
            return by_rule[alertname]
        for prefix in self.prefixes:
            if alertname.startswith(prefix) and alertname[len(prefix) :] in by_rule:
                return by_rule[alertname[len(prefix) :]]
        return self.default

    def choose(self, alertnames: Iterable[str]) -> Row:
        """The winning row among several firing rules: the first listed."""
        rows = [self.row_for(name) for name in alertnames]
        if not rows:
            return self.default
        return min(rows, key=lambda row: (row.priority, row.rule))

    def covers(self, alertname: str) -> bool:
        return self.row_for(alertname) is not self.default


def _row(data: Any, priority: int, where: str) -> Row:
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: each row must be a mapping, got {data!r}")
    unknown = set(data) - {"rule", "action", "category", "why"}
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    action, category = data.get("action"), data.get("category")
    if action not in ACTIONS:
        raise ValueError(f"{where}: action {action!r} is not one of {', '.join(ACTIONS)}")
    if category not in CATEGORIES:
        raise ValueError(f"{where}: category {category!r} is not one of {', '.join(CATEGORIES)}")
    rule = data.get("rule", "*")
    if not isinstance(rule, str) or not rule:
        raise ValueError(f"{where}: 'rule' must be a non-empty rule name")
    return Row(rule, action, category, priority, str(data.get("why", "")))


def parse_table(data: Any, source: str = "<table>") -> RemedyTable:
    """Validate a table document; errors name the file and the offending row."""
    if not isinstance(data, Mapping) or not isinstance(data.get("rules"), list):
        raise ValueError(f"{source}: expected a mapping with a 'rules' list")
    rows = tuple(_row(r, i, f"{source} rules[{i}]") for i, r in enumerate(data["rules"]))
    names = [row.rule for row in rows]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"{source}: rules listed twice: {', '.join(duplicates)}")
    default = _row(data.get("default"), len(rows), f"{source} default")
    prefixes = data.get("app_prefixes", [])
    if not isinstance(prefixes, list) or not all(isinstance(p, str) for p in prefixes):
        raise ValueError(f"{source}: 'app_prefixes' must be a list of strings")
    return RemedyTable(rows, default, tuple(prefixes))


def load_table(path: Path | None = None) -> RemedyTable:
    """The shipped table, or one from `path`."""
    if path is None:
        text = resources.files("pytest_marathon.agents").joinpath("runbook_table.yaml").read_text("utf-8")
        source = "runbook_table.yaml"
    else:
        text, source = Path(path).read_text(encoding="utf-8"), str(path)
    return parse_table(yaml.safe_load(text), source)
