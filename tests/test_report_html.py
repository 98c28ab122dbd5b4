"""The HTML report renders offline in headless Chromium with one timeline per run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from filelock import FileLock

from pytest_marathon.cli import main

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """Two runs and their report, made once even when xdist spreads this module over workers
    (they share the parent of their base temp dirs; a file lock elects one to write it)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    root = root / "report"
    html = root / "report.html"
    seeds = (1, 2)
    root.mkdir(exist_ok=True)
    with FileLock(str(root / "report.lock")):
        if not html.is_file():
            bundles = []
            for seed in seeds:
                assert main(["run", "--app", "boutique", "--agent", "noop", "--seed", str(seed),
                             "--scenario", "short-5", "--out", str(root / "b"),
                             "--baseline-cache", str(root / "cache")]) == 0
                bundles.append(str(root / "b" / f"boutique-noop-seed{seed}-short-5"))
            assert main(["report", *bundles, "-o", str(html)]) == 0
    return html, len(seeds)


def test_report_is_self_contained(report: tuple[Path, int]) -> None:
    html, runs = report
    text = html.read_text()
    assert len(re.findall(r'<figure class="timeline"><svg', text)) == runs
    assert not re.search(r'(src|href)="(https?:)?//', text)
    assert "<img" not in text  # vector figures inline, nothing to fetch


def _runs(html: Path) -> dict[str, str]:
    """Each run's section of the report, by run id."""
    text = html.read_text()
    return dict(re.findall(r'<section class="run" id="([^"]+)">(.*?)</section>', text, re.S))


def test_each_fault_bar_has_its_outcome_colour_and_the_legend_names_every_mark(
    report: tuple[Path, int],
) -> None:
    from pytest_marathon.report.figures import OUTCOME_COLOURS
    from pytest_marathon.scoring import score_bundle

    html, _ = report
    for run_id, section in _runs(html).items():
        href = re.search(r'bundle <a href="([^"]+)"', section).group(1)
        per_fault = score_bundle(html.parent / href, allow_incomplete=True)["per_fault"]
        timeline = re.search(r'<figure class="timeline">(.*?)</figure>', section, re.S).group(1)
        counts: dict[str, int] = {}
        for fault in per_fault:
            counts[fault["outcome"]] = counts.get(fault["outcome"], 0) + 1
        for outcome, n in counts.items():
            # one bar per fault of that outcome, plus its legend swatch
            assert timeline.count(f"fill: {OUTCOME_COLOURS[outcome]}") >= n + 1, (run_id, outcome)
            assert f">{outcome}<" in timeline, (run_id, outcome)
        for mark in ("alert fired", "incident report", "action ok", "action refused/failed"):
            assert f">{mark}<" in timeline
        ticks = re.findall(r"<text[^>]*>(\d+)</text>", timeline)
        assert {"0", "10", "20"} <= set(ticks), ticks  # minute numbers on the axes
        rows = re.findall(r"<tr><td>f\d+</td>", section)
        assert len(rows) == len(per_fault)  # the per-fault table lists every fault


def test_runs_show_their_metrics_and_the_spread_across_seeds(report: tuple[Path, int]) -> None:
    html, runs = report
    text = html.read_text()
    for section in _runs(html).values():
        header = re.search(r'<table class="metrics">\s*<tr>(.*?)</tr>', section, re.S).group(1)
        assert "<th>Score</th>" in header and "<th>Inv ok</th>" in header
    spread = re.search(r'<table class="spread">(.*?)</table>', text, re.S).group(1)
    row = re.search(r"<tr><td>noop</td><td>boutique</td><td>(\d+)</td><td>([^<]+)</td>",
                    spread)
    assert row is not None and int(row.group(1)) == runs
    assert re.fullmatch(r"0\.0 ± 0\.0 \(0\.0–0\.0\)", row.group(2)), row.group(2)


def test_bundle_links_are_relative_to_the_report(report: tuple[Path, int]) -> None:
    html, _ = report
    for section in _runs(html).values():
        href = re.search(r'bundle <a href="([^"]+)"', section).group(1)
        assert not href.startswith("/") and (html.parent / href / "manifest.json").is_file()


def test_a_report_of_twenty_marathons_stays_small(report: tuple[Path, int]) -> None:
    """Measured on the two 35-minute runs: what each run adds, scaled to twenty 90-minute runs
    (2.6 times the faults and minutes), must stay under 5 MB."""
    html, runs = report
    per_run = max(len(section) for section in _runs(html).values())
    assert per_run * 2.6 * 20 < 5_000_000, per_run


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_renders_in_headless_chromium(report: tuple[Path, int], tmp_path: Path) -> None:
    html, runs = report
    browser = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--user-data-dir=" + str(tmp_path / "profile")]
    shot = tmp_path / "report.png"
    subprocess.run([*browser, f"--screenshot={shot}", "--window-size=1400,2400",
                    html.as_uri()], check=True, capture_output=True, timeout=120)
    assert shot.stat().st_size > 10_000
    dom = subprocess.run([*browser, "--virtual-time-budget=5000", "--dump-dom", html.as_uri()],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    assert f'data-timelines-rendered="{runs}"' in dom
