"""The no-action (noop) bundle each degradation level is measured against, cached on disk.

The baseline depends only on (release, app, scenario, seed, backend), so it is computed once and
reused by every agent and every pytest session. A file lock makes concurrent xdist workers wait
for the one that computes it instead of computing it twice; the bundle is moved into place only
when sealed, so a crash never leaves a half-written baseline that looks valid.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from filelock import FileLock

from pytest_marathon import RELEASE
from pytest_marathon.config import RunConfig, scenario_slug

NOOP_AGENT = "noop"
DEFAULT_CACHE_DIR = Path(".marathon") / "noop"


def baseline_path(config: RunConfig, cache_dir: Path) -> Path:
    """Cache entry of config's baseline; a scenario file is keyed by its content as well, since
    two files may share a name but not a schedule."""
    release = re.sub(r"[^A-Za-z0-9_.]+", "-", RELEASE)
    scenario = scenario_slug(config.scenario)
    if scenario != config.scenario:
        content = Path(config.scenario).read_bytes()
        scenario += "-" + hashlib.sha256(content).hexdigest()[:12]
    name = f"{config.app}-{scenario}-seed{config.seed}-{config.backend}"
    return Path(cache_dir) / release / name


def cached_noop_bundle(
    config: RunConfig, cache_dir: Path, run_noop: Callable[[RunConfig], Path]
) -> Path:
    """The noop bundle of config's (app, scenario, seed, backend); `run_noop` writes one when
    the cache has none and returns its directory (sealed)."""
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
