"""The no-action (noop) bundle each degradation level is measured against, cached on disk.

The baseline depends on (release, app, scenario, seed, backend) and the run configuration the
scorer compares (users, Δ, budget, mutation cap, scenario/catalog/rule-pack digests), so it is
computed once per such identity and reused by every agent and every pytest session; a run with
other users or another Δ never reuses a baseline of the defaults. A file lock makes concurrent
xdist workers wait for the one that computes it instead of computing it twice; the bundle is
moved into place only when sealed, so a crash never leaves a half-written baseline that looks
valid.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_marathon import RELEASE
from pytest_marathon.config import RunConfig
from pytest_marathon.scoring.baseline_cache import DEFAULT_CACHE_DIR, baseline_path_for
from pytest_marathon.scoring.degradation import NOOP_AGENT, baseline_identity

__all__ = [
    "DEFAULT_CACHE_DIR",
    "NOOP_AGENT",
    "baseline_path",
    "baseline_path_for",
    "cached_noop_bundle",
]


def run_identity(config: RunConfig) -> dict[str, Any]:
    """The manifest fields a run of `config` records that its baseline must share."""
    return baseline_identity(
        {
            "release": RELEASE,
            "app": config.app,
            "scenario": config.scenario,
            "seed": config.seed,
            "backend": config.backend,
            "config": config.manifest_config(),
        }
    )


def baseline_path(config: RunConfig, cache_dir: Path) -> Path:
    """Cache entry of config's baseline."""
    return baseline_path_for(run_identity(config), cache_dir)



def cached_noop_bundle(
    config: RunConfig, cache_dir: Path, run_noop: Callable[[RunConfig], Path]
) -> Path:
    """The noop bundle of config's baseline identity; `run_noop` writes one when the cache has
    none and returns its directory (sealed)."""
    target = baseline_path(config, cache_dir)
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if target.is_dir():
            return target
        staging = target.parent / f".{target.name}.{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        noop = replace(config, agent=NOOP_AGENT, out_dir=staging)
        written = run_noop(noop)
        os.replace(written, target)
        shutil.rmtree(staging, ignore_errors=True)
    return target
