"""What a run was made of, as digests a manifest can record and a baseline can be matched on.

A degradation level divides by a no-action run, so that run must have met the same world: the
same scenario file, fault catalog and alert rules, not merely the same names for them. The
digests are computed from the very files the loaders read (`faults.scenario.scenario_bytes`,
`faults.catalog.catalog_files`, `alerting.rules.rule_pack_files`), so a changed file can never
hide behind an unchanged name.

A digest over several files is SHA-256 of the lines `<relative path>:<sha256 of its bytes>\\n`,
sorted by path (a renamed file changes it too).
"""

from __future__ import annotations

from typing import Any

from pytest_marathon.faults.digests import catalog_digest, files_digest, scenario_digest

__all__ = [
    "catalog_digest",
    "effective_users",
    "files_digest",
    "rule_pack_digest",
    "run_digests",
    "scenario_digest",
]


def rule_pack_digest(app: str) -> str:
    """Digest of the app's alert rule pack files."""
    from pytest_marathon.alerting.rules import rule_pack_files

    return files_digest(rule_pack_files(app))


def effective_users(app: str, backend: str, users: int | None) -> int:
    """The number of simulated users a run drives: the configured one, else the app's default
    (recorded as a number, so that `None` and the default it stands for are one configuration)."""
    if users is not None:
        return int(users)
    # the kubernetes backend runs the manifests rendered from the same app.yaml (or a twin of it)
    if backend not in ("twin", "kubernetes"):
        raise ValueError(f"no default user count known for backend {backend!r}")
    from pytest_marathon.twin.appspec import load_app

    return int(load_app(app).load.users)


def run_digests(app: str, scenario: str) -> dict[str, Any]:
    """The three digests a manifest's `config` records."""
    return {
        "scenario_digest": scenario_digest(scenario),
        "catalog_digest": catalog_digest(app),
        "rule_pack_digest": rule_pack_digest(app),
    }
