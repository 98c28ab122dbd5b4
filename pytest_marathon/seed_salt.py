"""The secret seed salt: a schedule nobody can replay from the public seed and catalog alone.

A seed is public (test ids, manifests, saved results) and so is the shipped catalog, so anyone,
an agent included, can draw an unsalted run's schedule with `schedule_for`. A run given a salt
(`--marathon-seed-salt`, `pytest-marathon run --seed-salt`, `MARATHON_SEED_SALT`) draws it from
keys that need the salt:

* the *run salt* is HMAC-SHA256 keyed by the session's salt over (app, scenario, seed), so every
  run of a grid has its own, and revealing one run's never reveals another's: the bundles a
  session sealed first do not open the schedules of the runs still going;
* every schedule stream's 64-bit seed is HMAC-SHA256 keyed by the run salt over the seed and
  the stream's purpose, in place of the public SHA-256 of `determinism.derive_seed`;
* the manifest commits to the run salt while the run goes (`config.seed_salt_commitment`, the
  SHA-256 of a domain prefix and the run salt) and reveals it at sealing or closing
  (`seed_salt`), so a scorer can check that the schedule it reads is the one committed to, and
  a killed run, which reveals nothing, can be scored by whoever holds the session's salt.

The commitment is public while the run goes, so the salt must be unguessable: at least
`MIN_SALT_CHARS` characters (`python -c "import secrets; print(secrets.token_hex(16))"`).
The twin's own noise (load, latencies, pod names) stays seeded by the seed alone: the agent
observes it through the tools anyway, it says nothing about which faults come, and keeping it
unsalted lets a salted run and the unsalted run of the same seed differ only in their faults.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
from collections.abc import Mapping

#: The environment variable a run's salt is read from when no option gives one.
SEED_SALT_ENV = "MARATHON_SEED_SALT"
MIN_SALT_CHARS = 16
_RUN_SALT_DOMAIN = b"pytest-marathon run seed salt v1\0"
_COMMITMENT_DOMAIN = b"pytest-marathon seed salt commitment v1\0"
_COMMITMENT_PREFIX = "sha256:"


class SeedSaltError(ValueError):
    """A salt that cannot be used, or one that does not match a bundle's commitment."""


def check_salt(salt: object) -> str:
    """The salt if it is usable, else `SeedSaltError` saying why (never echoing it)."""
    if not isinstance(salt, str) or not salt.strip():
        raise SeedSaltError("the seed salt is empty")
    if len(salt) < MIN_SALT_CHARS:
        raise SeedSaltError(
            f"the seed salt has {len(salt)} characters, fewer than {MIN_SALT_CHARS}: its hash is "
            "public while the run goes, so a short salt can be guessed from it (use e.g. "
            "python -c \"import secrets; print(secrets.token_hex(16))\")"
        )
    return salt


def run_salt(salt: str, app: str, scenario: str, seed: int) -> str:
    """The salt of one run (hex): HMAC-SHA256 keyed by the session's salt over the run's
    (app, scenario as the manifest records it, seed)."""
    message = _RUN_SALT_DOMAIN + json.dumps([app, scenario, int(seed)]).encode()
    return hmac.new(check_salt(salt).encode(), message, hashlib.sha256).hexdigest()


def commitment(run_salt_hex: str) -> str:
    """`sha256:<hex>` of the domain prefix and the run salt: what the manifest holds while the
    run goes."""
    digest = hashlib.sha256(_COMMITMENT_DOMAIN + run_salt_hex.encode()).hexdigest()
    return _COMMITMENT_PREFIX + digest


def matches(run_salt_hex: object, committed: object) -> bool:
    """Whether a revealed run salt is the one the manifest committed to (constant time)."""
    if not isinstance(run_salt_hex, str) or not isinstance(committed, str):
        return False
    return hmac.compare_digest(commitment(run_salt_hex), committed)


def without_salt(env: Mapping[str, str]) -> dict[str, str]:
    """An agent process's environment: the runner's, minus the salt it may have been given in
    `MARATHON_SEED_SALT` (with the salt and the public seed, the agent could draw the schedule)."""
    return {name: value for name, value in env.items() if name != SEED_SALT_ENV}


def salted_seed(run_salt_hex: str, seed: int, *purpose: str) -> int:
    """A 64-bit seed for one purpose of a salted run; cannot be computed without the salt."""
    message = f"{int(seed)}|{'/'.join(purpose)}".encode()
    digest = hmac.new(run_salt_hex.encode(), message, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big")


def salted_rng(run_salt_hex: str, seed: int, *purpose: str) -> random.Random:
    """The salted counterpart of `determinism.rng_for`."""
    return random.Random(salted_seed(run_salt_hex, seed, *purpose))
