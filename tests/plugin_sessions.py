"""What every pytester session of the plugin needs: the small two-fault scenario beside it, and
one noop-baseline cache shared by all of a test run's sessions, also across xdist workers (the
cache's file lock keeps it consistent), so each baseline is computed once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TWO_FAULTS = Path(__file__).parent / "scenarios" / "two-faults.yaml"


def prepare_session(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Write `two-faults.yaml` into the session's folder and point its `.marathon/noop` at the
    shared cache; returns the cache folder."""
    pytester.path.joinpath("two-faults.yaml").write_text(TWO_FAULTS.read_text())
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the workers' base folders share this parent
    cache = root / "marathon-noop-cache"
    cache.mkdir(exist_ok=True)
    (pytester.path / ".marathon").mkdir()
    (pytester.path / ".marathon" / "noop").symlink_to(cache)
    return cache
