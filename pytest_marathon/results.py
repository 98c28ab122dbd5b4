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

from pytest_marathon.isolation.levels import is_verified

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
    #: Invocations by how they ended (`ok`, `timeout`, `crash`, `error`), from the scorer's
    #: `diagnostics.invocation_outcomes`: a run whose agent never worked must be visible as such.
    invocations: Mapping[str, int] = field(default_factory=dict)
    #: The first invocation that did not end `ok` ({"n", "status", "detail"}), read from the
    #: bundle's `invocations` stream, so a failed verdict can say what went wrong.
    first_failed_invocation: Mapping[str, Any] | None = None
    #: False for an agent whose code ran inside the runner and is not a built-in baseline: it
    #: could have read or rewritten its own evidence (`agent_flags` of the manifest).
    verified: bool = True
    #: The run's first request its model recording could not answer, in one line (None: the
    #: run was not replayed, or replayed faithfully); read from the bundle's `invocations`.
    replay_mismatch: str | None = None

    @property
    def score(self) -> float:
        return float(self.metrics.get("score") or 0.0)

    @property
    def run_id(self) -> str:
        return self.bundle.name

    @property
    def invocations_total(self) -> int:
        return sum(self.invocations.values())

    @property
    def invocations_ok(self) -> int:
        return int(self.invocations.get("ok", 0))

    @property
    def invocations_failed(self) -> int:
        return self.invocations_total - self.invocations_ok

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
            "invocations": dict(sorted(self.invocations.items())),
            "first_failed_invocation": (
                None if self.first_failed_invocation is None else dict(self.first_failed_invocation)
            ),
            "verified": self.verified,
            "replay_mismatch": self.replay_mismatch,
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
            invocations=invocations_from_score(score),
            first_failed_invocation=first_failed_invocation(bundle),
            verified=verified_from_score(score),
            replay_mismatch=replay_mismatch(bundle),
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
            invocations={str(k): int(v) for k, v in (data.get("invocations") or {}).items()},
            first_failed_invocation=data.get("first_failed_invocation"),
            verified=bool(data.get("verified", True)),
            replay_mismatch=data.get("replay_mismatch"),
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


def verified_from_score(score: Mapping[str, Any]) -> bool:
    flags = (score.get("run") or {}).get("agent_flags") or {}
    return is_verified(flags.get("isolation"), bool(flags.get("built_in")))


def invocations_from_score(score: Mapping[str, Any]) -> dict[str, int]:
    """Invocation counts by status, as the scorer tallied them (docs/score-json.md,
    `diagnostics.invocation_outcomes`); empty when the score predates that field."""
    counts = (score.get("diagnostics") or {}).get("invocation_outcomes") or {}
    return {str(status): int(n) for status, n in sorted(counts.items())}


def replay_mismatch(bundle: Path) -> str | None:
    """The replay mismatch an `invocations` record of the bundle carries (the proxy records the
    run's first one only), or None."""
    from pytest_marathon.bundle import BundleError, read_bundle

    try:
        records = read_bundle(bundle, allow_incomplete=True).stream("invocations")
    except (BundleError, OSError, ValueError):
        return None
    return next((str(r["replay_mismatch"]) for r in records if r.get("replay_mismatch")), None)


def first_failed_invocation(bundle: Path) -> dict[str, Any] | None:
    """The first `invocations` record of the bundle whose status is not `ok`, trimmed to what a
    one-line verdict needs. The scorer only counts statuses; the cause lives in the bundle."""
    from pytest_marathon.bundle import BundleError, read_bundle

    try:
        records = read_bundle(bundle, allow_incomplete=True).stream("invocations")
    except (BundleError, OSError, ValueError):
        return None
    for record in records:
        status = str(record.get("status") or "ok")
        if status != "ok":
            return {"n": record.get("n"), "status": status, "detail": str(record.get("detail") or "")}
    return None


def parse_failure_fraction(raw: str | float) -> float:
    """`25%` or `0.25` as the fraction 0.25; ValueError (saying what is accepted) otherwise.

    A percentage and a fraction are both natural to type; a bare number above 1 is refused rather
    than guessed at, since `25` could mean either 25 % or "25 invocations"."""
    text = str(raw).strip()
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # also refuses nan
        raise ValueError(
            f"{raw!r} is not a share of invocations; give a percentage such as 25% or a "
            "fraction between 0 and 1 such as 0.25"
        )
    return value


DEFAULT_MAX_FAILED_INVOCATIONS = "25%"
_DETAIL_CLIP = 160


def invocation_failure(result: MarathonResult, max_failed: float, option: str) -> str | None:
    """The one-line verdict when more than `max_failed` (a fraction) of the run's invocations did
    not end `ok`, else None. A run scored on an agent that never ran is not a result about the
    agent, so it must not pass as one; a few failures (a timeout now and then) are tolerated."""
    total, failed = result.invocations_total, result.invocations_failed
    if total == 0 or failed / total <= max_failed:
        return None
    line = (
        f"{failed} of {total} invocations did not end ok ({failed / total:.0%}, above the "
        f"{max_failed:.0%} allowed by {option})"
    )
    first = result.first_failed_invocation
    if first:
        detail = " ".join(str(first.get("detail") or "").split())
        if len(detail) > _DETAIL_CLIP:
            detail = detail[: _DETAIL_CLIP - 3] + "..."
        line += f"; first: invocation {first.get('n')} {first.get('status')}"
        line += f": {detail}" if detail else ""
    return line


def format_invocations(ok: int, total: int) -> str:
    """`43/45` (ok of all), or a dash for a run that recorded no invocation."""
    return f"{ok}/{total}" if total else "-"


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
    #: Invocations that ended `ok`, and all invocations, summed over the row's runs.
    invocations_ok: int = 0
    invocations_total: int = 0
    #: False when any of the row's runs is unverified (an in-process plug-in).
    verified: bool = True


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
        rows.append(
            LeaderboardRow(
                agent,
                app,
                len(runs),
                means,
                invocations_ok=sum(r.invocations_ok for r in runs),
                invocations_total=sum(r.invocations_total for r in runs),
                verified=all(r.verified for r in runs),
            )
        )
    rows.sort(key=lambda row: (-(row.means["score"] or 0.0), row.agent, row.app))
    return rows


def leaderboard_header() -> list[str]:
    return ["Agent", "App", "Runs", *(title for title, _, _ in LEADERBOARD_COLUMNS), "Inv ok"]


def leaderboard_cells(row: LeaderboardRow) -> list[str]:
    """A row as text cells (terminal and HTML report alike); `Inv ok` is summed, not a mean, so
    a reader sees how many invocations the means rest on."""
    agent = row.agent if row.verified else f"{row.agent} (unverified)"
    cells = [agent, row.app, str(row.runs)]
    for _, name, fmt in LEADERBOARD_COLUMNS:
        value = row.means.get(name)
        cells.append("-" if value is None else fmt.format(value))
    cells.append(format_invocations(row.invocations_ok, row.invocations_total))
    return cells


def format_leaderboard(rows: list[LeaderboardRow]) -> str:
    """The paper's Table 2 shape as fixed-width text; a dash where no run reached the stage."""
    header = leaderboard_header()
    body = [leaderboard_cells(row) for row in rows]
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
    """The `--marathon-json` file: configuration info, every run, and the leaderboard (with each
    row's spread across its runs: n, mean, stdev, min, max per metric)."""
    from pytest_marathon.spread import spreads

    ordered = sorted(results, key=lambda r: (r.agent, r.app, r.scenario, r.seed))
    spread = spreads(ordered)
    document = {
        "info": dict(info),
        "runs": [result.to_json() for result in ordered],
        "leaderboard": [
            {
                "agent": row.agent,
                "app": row.app,
                "runs": row.runs,
                "spread": {name: value.to_json()
                           for name, value in spread.get((row.agent, row.app), {}).items()},
                "means": dict(row.means),
                "invocations_ok": row.invocations_ok,
                "invocations_total": row.invocations_total,
                "verified": row.verified,
            }
            for row in leaderboard(ordered)
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
