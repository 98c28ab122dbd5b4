"""A re-run of the same run id keeps the bundle it replaces, one generation deep.

Bundles are evidence: deleting one because the same agent x app x seed ran again would lose a
result without a word (the earlier run may have been the interesting one). The old folder is
renamed `<run id>.prev`, replacing an older `.prev`, so repeated runs do not pile up; whoever
starts the run says so (the plugin in its summary, the CLI on stderr).
"""

from __future__ import annotations

import shutil
from pathlib import Path

SUFFIX = ".prev"


def previous_path(bundle: Path) -> Path:
    return bundle.with_name(bundle.name + SUFFIX)


def keep_previous(bundle: Path) -> Path | None:
    """Move an existing `bundle` folder aside to `<bundle>.prev`; its new path, or None."""
    bundle = Path(bundle)
    if not bundle.exists():
        return None
    previous = previous_path(bundle)
    if previous.is_dir() and not previous.is_symlink():
        shutil.rmtree(previous)
    elif previous.exists() or previous.is_symlink():
        previous.unlink()
    bundle.rename(previous)
    return previous
