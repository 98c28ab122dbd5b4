"""The scorer's check of a salted bundle: the salt it reveals is the one it committed to.

A salted run's manifest holds `config.seed_salt_commitment` from its first write and reveals
the run salt (`seed_salt`) when sealed or closed incomplete (pytest_marathon/seed_salt.py).
A revealed salt that does not hash to the commitment means the schedule cannot be trusted to
be the one the run was committed to, so the bundle is refused. A killed (`running`) bundle
reveals nothing; its run salt comes from the session's salt the user gives the scorer, checked
against the commitment the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..bundle import Bundle
from ..seed_salt import SeedSaltError, check_salt, commitment, matches, run_salt
from .evidence import ScoreRefusal

REVEALED_FIELD = "seed_salt"


def committed_salt(manifest: Mapping[str, Any]) -> str | None:
    """The manifest's salt commitment, None for an unsalted run."""
    config = manifest.get("config")
    value = config.get("seed_salt_commitment") if isinstance(config, Mapping) else None
    return None if value is None else str(value)


def verified_run_salt(bundle: Bundle, seed_salt: str | None = None) -> str | None:
    """The run salt the bundle's schedule was drawn with (None: unsalted), after proving it:
    a revealed salt must match the commitment, and so must the one derived from `seed_salt`
    (the session's salt, needed for a killed run) when given. Raises ScoreRefusal otherwise."""
    manifest = bundle.manifest
    committed = committed_salt(manifest)
    revealed = manifest.get(REVEALED_FIELD)
    if committed is None:
        if revealed is not None:
            raise ScoreRefusal(
                f"{bundle.path} reveals a seed salt but its manifest commits to none"
            )
        if seed_salt is not None:
            raise ScoreRefusal(
                f"{bundle.path} was recorded without a seed salt; do not pass one (--seed-salt)"
            )
        return None
    if bundle.status == "running":
        if revealed is not None:
            raise ScoreRefusal(f"{bundle.path} is still running but reveals its seed salt")
    elif not matches(revealed, committed):
        raise ScoreRefusal(
            f"the seed salt {bundle.path} reveals does not match the commitment its manifest "
            f"made during the run ({committed}): its schedule cannot be trusted"
        )
    if seed_salt is None:
        return None if revealed is None else str(revealed)
    try:
        derived = run_salt(
            check_salt(seed_salt),
            str(manifest.get("app")),
            str(manifest.get("scenario")),
            int(manifest.get("seed") or 0),
        )
    except (SeedSaltError, ValueError, TypeError) as exc:
        raise ScoreRefusal(f"--seed-salt: {exc}") from None
    if not matches(derived, committed):
        raise ScoreRefusal(
            f"the given seed salt is not the one {bundle.path} was run with (its manifest "
            f"commits to {committed}, the given salt gives {commitment(derived)})"
        )
    return derived
