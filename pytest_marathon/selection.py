"""Re-running a marathon by pasting the id pytest printed (`pytest 'marathon[boutique-runbook-seed1]'`).

The grid's items are not in any file, so pytest would take such an argument for a path and stop
(`path cannot contain [] parametrization`). Before collection the plugin takes every argument
that names a marathon item (and is not an existing path) out of the test arguments and keeps it as
a selection: the grid is then narrowed to the named items, and when only marathon ids were given,
no file is collected, as when a single `file.py::test` is given. xdist workers parse the same
command line, so they make the same choice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

#: The collector every marathon item hangs under; its node id is the prefix of every item's id.
GRID_NAME = "marathon"

_ID = re.compile(rf"(?:::)?{GRID_NAME}(\[[^\]]*\])?")

SELECTED = pytest.StashKey[tuple[str, ...]]()


def split_arguments(args: Sequence[str], here: Path) -> tuple[list[str], list[str]]:
    """(test arguments to keep, marathon ids named): `marathon` alone names the whole grid."""
    keep, ids = [], []
    for arg in args:
        if _ID.fullmatch(arg) and not (here / arg).exists():
            ids.append(arg.removeprefix("::"))
        else:
            keep.append(arg)
    return keep, ids


def take_selection(config: pytest.Config) -> None:
    """Move marathon ids out of `config.args` into the stash (before collection starts)."""
    keep, ids = split_arguments(config.args, Path(config.invocation_params.dir))
    if ids:
        config.args[:] = keep
        config.stash[SELECTED] = tuple(ids)


def narrow(config: pytest.Config, grid: list[pytest.Item]) -> list[pytest.Item]:
    """The grid items the selection names; a name that matches no item is a usage error that
    lists the ids there are (a typo must not turn into an empty, passing session)."""
    ids = config.stash.get(SELECTED, ())
    if not ids or GRID_NAME in ids:
        return grid
    by_id = {item.nodeid: item for item in grid}
    missing = [name for name in ids if name not in by_id]
    if missing:
        raise pytest.UsageError(
            f"not found: {', '.join(missing)}; the marathon grid has: {', '.join(by_id)}"
        )
    wanted = set(ids)
    return [item for item in grid if item.nodeid in wanted]
