"""Saved runs and the regression gate against them (pytest-benchmark style).

`--marathon-save NAME` writes `<storage>/NNNN_NAME.json` (storage: `--marathon-storage`, default
`.marathon/saved`) with machine and release info, the UTC time and the git commit of the folder
pytest ran in; `--marathon-compare [NAME]` loads the newest (or a named) save; a
`--marathon-compare-fail METRIC:TOLERANCE` rule fails each run that got worse than its saved
counterpart by more than the tolerance (absolute `score:5`, relative `score:10%`). Scores are only
comparable within one release, so a save from another release is refused, not silently used.
The twin is deterministic, so a save is not filed per OS or Python version: a save made on one
machine compares on any other (saves of earlier versions, filed under a per-machine folder, are
still found).
"""

from __future__ import annotations

import json
import platform
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_marathon import RELEASE
from pytest_marathon.results import METRICS, MarathonResult


class StorageError(ValueError):
    """A save that cannot be found or used; the message names what was looked for."""


def machine_info() -> dict[str, Any]:
    return {
        "node": platform.node(),
        "machine": platform.machine(),
        "system": platform.system(),
        "python_implementation": platform.python_implementation(),
        "python_version": platform.python_version(),
        "release": RELEASE,
    }


def check_save_name(name: str) -> str:
    """The save name, if it can name a file; checked when options are read, so a bad name stops
    pytest before any run instead of losing every finished run at the end."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise StorageError(f"bad save name {name!r}: use letters, digits, '.', '_' or '-'")
    return name


def save_runs(
    root: Path, name: str, results: Iterable[MarathonResult], source_dir: Path | None = None
) -> Path:
    """Write a numbered save and return its path; `source_dir` is where the commit is read."""
    from pytest_marathon.provenance import provenance

    check_save_name(name)
    folder = Path(root)
    folder.mkdir(parents=True, exist_ok=True)
    numbers = [int(p.name[:4]) for p in _saves(folder)]
    path = folder / f"{max(numbers, default=0) + 1:04d}_{name}.json"
    runs = {
        run_key(r): r.to_json() for r in sorted(results, key=run_key)
    }
    document = {"machine_info": machine_info(), "release": RELEASE, "name": name,
                **provenance(Path(source_dir) if source_dir is not None else Path.cwd()),
                "runs": runs}
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    return path


def _saves(folder: Path) -> list[Path]:
    """Saves in `folder`, and in the per-machine subfolders earlier versions filed them in,
    oldest first (by number, then by time written)."""
    found = [*folder.glob("[0-9][0-9][0-9][0-9]_*.json"),
             *folder.glob("*/[0-9][0-9][0-9][0-9]_*.json")]
    return sorted(found, key=lambda p: (int(p.name[:4]), p.stat().st_mtime, str(p)))


def run_key(result: MarathonResult) -> str:
    """What identifies 'the same run' across saves: agent, app, scenario, seed, backend."""
    return f"{result.agent}|{result.app}|{result.scenario}|seed{result.seed}|{result.backend}"


@dataclass(frozen=True)
class SavedRuns:
    path: Path
    runs: Mapping[str, Mapping[str, Any]]
    #: When the save was made (UTC, ISO 8601) and the commit it was made from, when known.
    saved_at: str | None = None
    commit: str | None = None

    def describe(self) -> str:
        """`0001_base.json (saved 2026-12-01T16:30:43Z, commit 1a2b3c4d)` as far as known."""
        facts = [f"saved {self.saved_at}" if self.saved_at else "",
                 f"commit {self.commit[:12]}" if self.commit else ""]
        facts = [fact for fact in facts if fact]
        return f"{self.path}" + (f" ({', '.join(facts)})" if facts else "")


def load_saved(root: Path, name: str | None) -> SavedRuns:
    """The newest save (name None or 'latest'), or the one whose number or name matches."""
    folder = Path(root)
    saves = _saves(folder) if folder.is_dir() else []
    if not saves:
        raise StorageError(f"no saved marathon runs under {folder} (save one with --marathon-save)")
    if name in (None, "latest"):
        path = saves[-1]
    else:
        matches = [p for p in saves if name in (p.stem, p.stem[:4], p.stem[5:])]
        if not matches:
            choices = ", ".join(p.stem for p in saves)
            raise StorageError(f"no saved run {name!r} under {folder}; choose one of: {choices}")
        path = matches[-1]
    document = json.loads(path.read_text())
    if document.get("release") != RELEASE:
        raise StorageError(
            f"{path} was saved by {document.get('release')!r}; scores are only comparable "
            f"within one release ({RELEASE})"
        )
    return SavedRuns(path, document["runs"], document.get("saved_at"), document.get("commit"))


@dataclass(frozen=True)
class CompareRule:
    metric: str
    tolerance: float
    relative: bool

    def __str__(self) -> str:
        return f"{self.metric}:{self.tolerance:g}{'%' if self.relative else ''}"


def parse_compare_rule(spec: str) -> CompareRule:
    match = re.fullmatch(r"([a-z_]+):(\d+(?:\.\d+)?)(%?)", spec.strip())
    if not match:
        raise StorageError(
            f"bad --marathon-compare-fail {spec!r}: use METRIC:TOLERANCE, e.g. score:5 or score:10%"
        )
    metric = match.group(1)
    if metric not in METRICS:
        raise StorageError(
            f"unknown metric {metric!r} in --marathon-compare-fail; choose one of: "
            + ", ".join(METRICS)
        )
    return CompareRule(metric, float(match.group(2)), bool(match.group(3)))


def regressions(
    current: MarathonResult, saved: SavedRuns, rules: Iterable[CompareRule]
) -> list[str]:
    """Messages for every rule the run breaks against its saved counterpart (none if unsaved)."""
    before = saved.runs.get(run_key(current))
    if before is None:
        return []
    messages = []
    for rule in rules:
        old = before["metrics"].get(rule.metric)
        new = current.metrics.get(rule.metric)
        if old is None or new is None:
            continue
        allowed = abs(old) * rule.tolerance / 100 if rule.relative else rule.tolerance
        worse = (old - new) if METRICS[rule.metric] else (new - old)
        if worse > allowed + 1e-9:
            messages.append(
                f"{rule.metric} regressed from {old:g} to {new:g} (tolerance {rule}, "
                f"saved in {saved.path.name})"
            )
    return messages
