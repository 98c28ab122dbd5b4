"""Where no-action baselines are cached, by what the scorer's baseline rule compares: `run`
writes them there (run/baseline.py) and `score` finds the one a run was measured against."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config import scenario_slug
from .degradation import baseline_identity

DEFAULT_CACHE_DIR = Path(".marathon") / "noop"


def baseline_path_for(manifest: Mapping[str, Any], cache_dir: Path) -> Path:
    """Cache entry of the baseline of a run with this manifest (or identity): a readable name
    plus a hash of everything the scorer's baseline rule compares."""
    identity = baseline_identity(manifest)
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    release = re.sub(r"[^A-Za-z0-9_.]+", "-", str(identity["release"]))
    scenario = scenario_slug(str(identity["scenario"]))
    name = f"{identity['app']}-{scenario}-seed{identity['seed']}-{identity['backend']}-{key}"
    return Path(cache_dir) / release / name


def cached_baseline(manifest: Mapping[str, Any], cache_dir: Path) -> Path | None:
    """The cached no-action bundle of this run's identity, if `run` sealed one there (a cache
    entry is moved into place only once sealed, run/baseline.py)."""
    path = baseline_path_for(manifest, cache_dir)
    return path if (path / "manifest.json").is_file() else None
