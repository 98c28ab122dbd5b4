"""Writing into an agent's workspace without following links the agent planted there.

The runner writes the alert history, the MCP configuration and the program's log into the
workspace, unsandboxed. An agent that replaced one of those files (or `.marathon/`) with a
symbolic link to a path outside would have the runner write there for it: into a live bundle, the
baseline cache, anywhere the runner may write. Every runner write into a workspace goes through
`write_in_workspace`, which replaces a planted link with a real file or folder first, and the
runner's control folder is cleared of links before each invocation (`clear_links`), so code
that writes there by path (the CLI presets' private homes) writes into the workspace.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_in_workspace(workspace: Path, relative: str | os.PathLike[str], text: str) -> Path:
    """Write `text` to `workspace/relative`; every folder on the way and the file itself are
    made real (a link is removed, never followed). Returns the file's path."""
    relative = Path(relative)
    if relative.is_absolute() or ".." in relative.parts:
        raise ValueError(f"{relative} is not a path inside the workspace")
    folder = Path(workspace)
    folder.mkdir(parents=True, exist_ok=True)  # the runner's own folder: created, never replaced
    for part in relative.parent.parts:
        folder = folder / part
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            folder.unlink()
        folder.mkdir(exist_ok=True)
    path = folder / relative.name
    if path.is_symlink():
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def clear_links(folder: Path) -> None:
    """Remove every symbolic link in and under `folder` (and `folder` itself if it is one),
    never following one: the runner's control folder holds no link the runner did not make at
    this invocation."""
    folder = Path(folder)
    if folder.is_symlink():
        folder.unlink()
        return
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in [*dirs, *files]:
            path = Path(root, name)
            if path.is_symlink():
                path.unlink()
