"""The self-contained HTML report: leaderboard, fault outcomes and one timeline per run.

Images are PNGs embedded as base64 and there are no external assets, so the file opens offline
and can be attached to a CI run as a single artifact.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

import jinja2

from pytest_marathon import RELEASE
from pytest_marathon.bundle import read_bundle
from pytest_marathon.config import RunConfig
from pytest_marathon.report.figures import outcomes_png, timeline_png
from pytest_marathon.results import (
    MarathonResult,
    leaderboard,
    leaderboard_cells,
    leaderboard_header,
)
from pytest_marathon.run.baseline import NOOP_AGENT, baseline_path_for

__all__ = ["result_from_bundle", "write_report"]


def write_report(path: Path, results: Iterable[MarathonResult], title: str = "") -> None:
    runs = sorted(results, key=lambda r: (r.agent, r.app, r.scenario, r.seed))
    sections = [_section(result) for result in runs]
    rows = [leaderboard_cells(row) for row in leaderboard(runs)]
    outcome_rows = [(section["id"], result.outcome_counts()) for section, result in
                    zip(sections, runs)]
    template = jinja2.Environment(autoescape=True).from_string(
        resources.files(__package__).joinpath("templates/report.html.j2").read_text()
    )
    html = template.render(
        title=title or "pytest-marathon report",
        release=RELEASE,
        columns=leaderboard_header(),
        leaderboard=rows,
        outcomes_png=_b64(outcomes_png(outcome_rows)),
        runs=sections,
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")


def _section(result: MarathonResult) -> dict[str, object]:
    bundle = read_bundle(result.bundle, allow_incomplete=True)
    streams = {
        name: bundle.stream(name)
        for name in ("schedule", "alerts", "reports", "interventions", "sli")
    }
    noop_sli = None
    if result.noop_bundle is not None and result.agent != NOOP_AGENT:
        noop_sli = read_bundle(result.noop_bundle, allow_incomplete=True).stream("sli")
    run_id = f"{result.app}-{result.agent}-seed{result.seed}-{result.scenario}"
    horizon = max((r["t"] for r in streams["sli"]), default=60.0)
    score = result.metrics.get("score")
    return {
        "id": run_id,
        "bundle": str(result.bundle),
        "complete": result.complete,
        "score": "-" if score is None else f"{score:.1f}",
        "timeline_png": _b64(timeline_png(run_id, streams, noop_sli, horizon)),
    }


def result_from_bundle(path: Path, baseline_cache: Path | None = None) -> MarathonResult:
    """Score a bundle on disk (against its cached noop baseline when there is one: the cache
    entry of the identity its manifest records, not of today's default configuration)."""
    from pytest_marathon.scoring import score_bundle

    bundle = read_bundle(path, allow_incomplete=True)
    manifest = bundle.manifest
    config = RunConfig(
        app=manifest["app"],
        agent=manifest["agent"],
        seed=int(manifest["seed"]),
        scenario=manifest["scenario"],
        backend=manifest.get("backend") or "twin",
    )
    noop = None
    if baseline_cache is not None and baseline_path_for(manifest, baseline_cache).is_dir():
        noop = baseline_path_for(manifest, baseline_cache)
    score = score_bundle(path, noop=noop, allow_incomplete=True)
    return MarathonResult.from_score(config, path, score, noop_bundle=noop, complete=bundle.complete)


def _b64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")
