"""Agent state kept as JSON in the private workspace.

Each invocation may run in a fresh process, so the baselines keep everything they remember in
their workspace. Writes go through a temporary file and an atomic rename so an invocation killed
at its budget never leaves half a state file behind.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def load_state(workspace: Path, name: str, default: dict[str, Any]) -> dict[str, Any]:
    """The stored state, or `default` on the first invocation."""
    path = workspace / name
    if not path.exists():
        return default
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"agent state {path} is not valid JSON: {exc}") from exc
    if not isinstance(state, dict):
        raise ValueError(f"agent state {path} must hold a JSON object")
    return state


def save_state(workspace: Path, name: str, state: dict[str, Any]) -> None:
    """Replace the stored state atomically."""
    workspace.mkdir(parents=True, exist_ok=True)
    path = workspace / name
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(state, sort_keys=True, indent=1), encoding="utf-8")
    os.replace(tmp, path)
