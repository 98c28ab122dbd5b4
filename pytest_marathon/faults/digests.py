"""Digests of the fault files a run reads: its scenario and its app's catalog.

They live beside the loaders they hash (`faults.scenario.scenario_bytes`,
`faults.catalog.catalog_files`) so that both the runner, which records them in the manifest
(`run.digests`), and the scorer, which must prove the installed catalog is the one a killed run
used before it redraws that run's schedule (`scoring.recovery`), compute them one way.

A digest over several files is SHA-256 of the lines `<relative path>:<sha256 of its bytes>\\n`,
sorted by path (a renamed file changes it too).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Protocol


class _Readable(Protocol):
    def read_bytes(self) -> bytes: ...


def files_digest(files: Iterable[tuple[str, _Readable]]) -> str:
    outer = hashlib.sha256()
    for relative, file in sorted(files, key=lambda pair: pair[0]):
        outer.update(f"{relative}:{hashlib.sha256(file.read_bytes()).hexdigest()}\n".encode())
    return outer.hexdigest()


def scenario_digest(scenario: str) -> str:
    """SHA-256 of the scenario file a run of `scenario` (a built-in name or a path) uses."""
    from pytest_marathon.faults.scenario import scenario_bytes

    return hashlib.sha256(scenario_bytes(scenario)).hexdigest()


def catalog_digest(app: str) -> str:
    """Digest of the app's fault catalog: its entries, patches and experiments."""
    from pytest_marathon.faults.catalog import catalog_files

    return files_digest(catalog_files(app))
