"""What a run produced, in the shapes users consume: a result object, JSON, the leaderboard.

Metric names here are the public vocabulary of the plugin (junit properties, JSON results,
thresholds, compare-fail); they are read from the scorer's output once, in `metrics_from_score`.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# name -> True when higher is better (drives compare-fail direction and bold-free leaderboard)
METRICS: dict[str, bool] = {
    "score": True,
    "correlated": True,
    "located": True,
    "repaired": True,
    "risk": False,
    "degradation_pct": False,
    "mttd_s": False,
    "mttl_s": False,
    "mttr_s": False,
    "model_calls": False,
    "tokens": False,
    "cost_usd": False,
}

LEADERBOARD_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("Score", "score", "{:.1f}"),
    ("Corr", "correlated", "{:.3f}"),
    ("Loc", "located", "{:.3f}"),
    ("Rep", "repaired", "{:.3f}"),
    ("Risk", "risk", "{:.3f}"),
    ("Degrad %", "degradation_pct", "{:.1f}"),
    ("MTTD", "mttd_s", "{:.0f}s"),
    ("MTTL", "mttl_s", "{:.0f}s"),
    ("MTTR", "mttr_s", "{:.0f}s"),
    ("Tokens", "tokens", "{:.0f}"),
    ("$", "cost_usd", "{:.2f}"),
)


@dataclass(frozen=True)
class FaultOutcome:
    """One injected fault and what the agent achieved on it."""

    fault_id: str
    catalog_id: str
    category: str
    inject_at: float
    revert_at: float | None
    outcome: str
    correlated: bool
    located: bool
    repaired: bool


@dataclass(frozen=True)
class MarathonResult:
    """A scored run: the numbers to assert on and where the evidence is."""

    app: str
    agent: str
    scenario: str
    seed: int
    backend: str
    bundle: Path
    metrics: Mapping[str, float | None]
    faults: tuple[FaultOutcome, ...] = ()
    complete: bool = True
    noop_bundle: Path | None = None
    score_report: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def score(self) -> float:
        return float(self.metrics.get("score") or 0.0)

    @property
    def run_id(self) -> str:
        return self.bundle.name

    def outcome_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for fault in self.faults:
            counts[fault.outcome] = counts.get(fault.outcome, 0) + 1
        return dict(sorted(counts.items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "app": self.app,
            "agent": self.agent,
            "scenario": self.scenario,
            "seed": self.seed,
            "backend": self.backend,
            "bundle": str(self.bundle),
            "noop_bundle": str(self.noop_bundle) if self.noop_bundle else None,
            "complete": self.complete,
            "metrics": {name: self.metrics.get(name) for name in sorted(self.metrics)},
            "outcomes": self.outcome_counts(),
            "faults": [vars(fault) for fault in self.faults],
        }

    @classmethod
    def from_score(
        cls,
        config: Any,
        bundle: Path,
        score: Mapping[str, Any],
        *,
        noop_bundle: Path | None,
        complete: bool = True,
    ) -> MarathonResult:
        """The result of one run's configuration (a RunConfig) and its scorer output: the one
        place the runner and the report turn a score into something to assert on."""
        return cls(
            app=config.app,
            agent=config.agent,
            scenario=config.scenario,
            seed=config.seed,
            backend=config.backend,
            bundle=Path(bundle),
            metrics=metrics_from_score(score),
            faults=faults_from_score(score),
            complete=complete,
            noop_bundle=noop_bundle,
            score_report=score,
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MarathonResult:
        return cls(
            app=data["app"],
            agent=data["agent"],
            scenario=data["scenario"],
            seed=int(data["seed"]),
            backend=data["backend"],
            bundle=Path(data["bundle"]),
            metrics=dict(data["metrics"]),
            faults=tuple(FaultOutcome(**fault) for fault in data.get("faults", ())),
            complete=bool(data.get("complete", True)),
            noop_bundle=Path(data["noop_bundle"]) if data.get("noop_bundle") else None,
        )


def metrics_from_score(score: Mapping[str, Any]) -> dict[str, float | None]:
    """Flatten the scorer's JSON (`scoring.score_bundle`, docs/score-json.md) into the plugin's
    metric names."""
    timing = score.get("timing") or {}
    cost = score.get("cost") or {}
    return {
        "score": _num(score.get("marathon_score")),
        "correlated": _num(score.get("correlated")),
        "located": _num(score.get("located")),
        "repaired": _num(score.get("repaired")),
        "risk": _num((score.get("risk") or {}).get("value")),
        "degradation_pct": _num((score.get("degradation") or {}).get("level_percent")),
        "mttd_s": _num((timing.get("mttd") or {}).get("median_s")),
        "mttl_s": _num((timing.get("mttl") or {}).get("median_s")),
        "mttr_s": _num((timing.get("mttr") or {}).get("median_s")),
        "model_calls": _num(cost.get("model_calls")),
        "tokens": _num(cost.get("tokens")),
        "cost_usd": _num(cost.get("usd")),
    }


def faults_from_score(score: Mapping[str, Any]) -> tuple[FaultOutcome, ...]:
    rows = score.get("per_fault") or ()
    return tuple(
        FaultOutcome(
            fault_id=row["fault_id"],
            catalog_id=row.get("catalog_id") or "",
            category=row.get("category") or "",
            inject_at=float(row.get("inject_at") or 0.0),
            revert_at=None if row.get("revert_at") is None else float(row["revert_at"]),
            outcome=row.get("outcome") or "missed",
            correlated=bool(row.get("correlated")),
            located=bool(row.get("located")),
            repaired=bool(row.get("repaired")),
        )
        for row in sorted(rows, key=lambda row: row["fault_id"])
    )


def _num(value: Any) -> float | None:
    if value is None or isinstance(value, str):
        return None
    number = float(value)
    return None if math.isnan(number) else round(number, 6)


# leaderboard ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaderboardRow:
    agent: str
    app: str
    runs: int
    means: Mapping[str, float | None]


def leaderboard(results: Iterable[MarathonResult]) -> list[LeaderboardRow]:
    """One row per agent x app, each metric the mean over seeds (and scenarios) that have it.

    Rows are sorted by mean score (best first), ties by agent then app, so the table is stable.
    """
    groups: dict[tuple[str, str], list[MarathonResult]] = {}
    for result in results:
        groups.setdefault((result.agent, result.app), []).append(result)
    rows = []
    for (agent, app), runs in groups.items():
        means: dict[str, float | None] = {}
        for name in METRICS:
            values = [r.metrics.get(name) for r in runs if r.metrics.get(name) is not None]
            means[name] = round(statistics.fmean(values), 6) if values else None
        rows.append(LeaderboardRow(agent, app, len(runs), means))
    rows.sort(key=lambda row: (-(row.means["score"] or 0.0), row.agent, row.app))
    return rows


def format_leaderboard(rows: list[LeaderboardRow]) -> str:
    """The paper's Table 2 shape as fixed-width text; a dash where no run reached the stage."""
    header = ["Agent", "App", "Runs", *(title for title, _, _ in LEADERBOARD_COLUMNS)]
    body = []
    for row in rows:
        cells = [row.agent, row.app, str(row.runs)]
        for _, name, fmt in LEADERBOARD_COLUMNS:
            value = row.means.get(name)
            cells.append("-" if value is None else fmt.format(value))
        body.append(cells)
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def render(cells: list[str]) -> str:
        return "  ".join(
            cell.ljust(width) if i < 2 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths))
        )

    lines = [render(header), render(["-" * width for width in widths])]
    lines.extend(render(cells) for cells in body)
    return "\n".join(lines)


def write_results_json(
    path: Path, results: Iterable[MarathonResult], info: Mapping[str, Any]
) -> None:
    """The `--marathon-json` file: configuration info, every run, and the leaderboard."""
    ordered = sorted(results, key=lambda r: (r.agent, r.app, r.scenario, r.seed))
    document = {
        "info": dict(info),
        "runs": [result.to_json() for result in ordered],
        "leaderboard": [
            {"agent": row.agent, "app": row.app, "runs": row.runs, "means": dict(row.means)}
            for row in leaderboard(ordered)
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
