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
    assert len(re.findall(r'<img class="timeline"[^>]*src="data:image/png;base64,', text)) == runs
    assert not re.search(r'(src|href)="(https?:)?//', text)


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
