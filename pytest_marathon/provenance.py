"""When and from which source a save was made: the UTC time and the git commit of the folder.

A save compared weeks later must say what it measured; the commit (with whether the work tree
had uncommitted changes) names the agent code that ran. Outside a git work tree, or without git,
the commit is simply unknown (None): saving never fails for want of it.
"""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path
from typing import Any


def utc_now() -> str:
    """ISO 8601 UTC time to the second, e.g. `2026-12-01T16:30:43Z`."""
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True, text=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_commit(folder: Path) -> dict[str, Any]:
    """{"commit": sha or None, "dirty": bool or None} of the work tree holding `folder`."""
    sha = _git(folder, "rev-parse", "HEAD")
    if not sha:
        return {"commit": None, "dirty": None}
    status = _git(folder, "status", "--porcelain", "--untracked-files=no")
    return {"commit": sha, "dirty": None if status is None else bool(status)}


def provenance(folder: Path) -> dict[str, Any]:
    return {"saved_at": utc_now(), **git_commit(folder)}
