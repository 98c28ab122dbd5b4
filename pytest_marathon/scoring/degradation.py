"""Service degradation D: degraded requests at the entry point, by the trapezoid rule."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..bundle import Bundle
from .evidence import ScoreRefusal

#: The agent a no-action baseline must come from.
NOOP_AGENT = "noop"
#: Manifest fields that must agree for a no-action bundle to be the agent run's baseline.
BASELINE_FIELDS = ("release", "app", "scenario", "seed", "backend")
#: Fields of the manifest's `config` that must agree too: the load, the cadence, the budget and
#: the cap change what the system goes through, and the digests prove that the scenario, fault
#: catalog and alert rules behind the names are the same files. A salted run's baseline is a noop
#: run with the same salt (same commitment): another salt is another schedule.
BASELINE_CONFIG_FIELDS = (
    "users",
    "delta_s",
    "budget_s",
    "mutation_cap",
    "scenario_digest",
    "catalog_digest",
    "rule_pack_digest",
    "seed_salt_commitment",
)


def baseline_identity(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """What a run's no-action baseline must share with it (a missing field is None), as one
    JSON-safe value: the scorer compares it, the runner's baseline cache is keyed on it."""
    config = manifest.get("config")
    config = config if isinstance(config, Mapping) else {}
    return {
        **{name: manifest.get(name) for name in BASELINE_FIELDS},
        "config": {name: config.get(name) for name in BASELINE_CONFIG_FIELDS},
    }


def degraded_requests(sli: list[tuple[float, float, float, float]]) -> float:
    """D = integral of min(1, e + l) * q dt over the recorded ticks (t, q, e, l), sorted."""
    total = 0.0
    for (t0, q0, e0, l0), (t1, q1, e1, l1) in zip(sli, sli[1:]):
        total += (t1 - t0) * (min(1.0, e0 + l0) * q0 + min(1.0, e1 + l1) * q1) / 2
    return total


def check_baseline(agent: Bundle, noop: Bundle) -> None:
    """Refuse a baseline that is not a no-action run of the agent run's release, app, scenario,
    seed, backend and run configuration, naming every difference. Any other bundle (a runbook's,
    a run with fewer users) would make the degradation level measure something else."""
    problems = []
    noop_agent = noop.manifest.get("agent")
    if noop_agent != NOOP_AGENT:
        problems.append(f"agent {noop_agent!r} is not the no-action agent {NOOP_AGENT!r}")
    theirs, ours = baseline_identity(noop.manifest), baseline_identity(agent.manifest)
    problems += [
        f"{name} {theirs[name]!r} != {ours[name]!r}"
        for name in BASELINE_FIELDS
        if theirs[name] != ours[name]
    ]
    problems += [
        f"config.{name} {theirs['config'][name]!r} != {ours['config'][name]!r}"
        for name in BASELINE_CONFIG_FIELDS
        if theirs["config"][name] != ours["config"][name]
    ]
    if problems:
        raise ScoreRefusal(
            f"the no-action bundle {noop.path} is not the baseline of {agent.path}: "
            + "; ".join(problems)
        )
