"""Seeded randomness split per purpose.

Every random draw in a run comes from a generator derived from (seed, purpose), so adding a new
consumer of randomness never shifts the draws of existing ones, and no result depends on hash
randomisation, wall-clock time or iteration order of unordered containers.
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(seed: int, *purpose: str) -> int:
    """A 64-bit seed for one purpose, stable across Python versions and processes."""
    text = f"{int(seed)}|{'/'.join(purpose)}".encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big")


def rng_for(seed: int, *purpose: str) -> random.Random:
    """An independent generator for one purpose of one seeded run."""
    return random.Random(derive_seed(seed, *purpose))
