"""Attacker agents: one per way of earning Marathon-Score credit without doing SRE work.

Each attacker does no diagnosis of its own: it may read every tool, but it never sees ground
truth, and its incidents and actions follow a fixed recipe. They exist to show that the scorer
and the interface close each exploit class of ARCHITECTURE.md section 7: a benchmark whose score
can be raised this way measures nothing. tests/test_adversaries.py runs them against the Runbook;
`benchmarks/agents_baselines.py --attackers` prints them beside the baselines.

Attackers that file "at the last invocation" need to know when that is. The run's length is
public (the scenario file and Δ), unlike its schedule, so `late_filing_at` reads it there.
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_marathon.agents.protocol import Agent

from pytest_marathon.config import DEFAULT_DELTA_S
from pytest_marathon.faults import load_scenario

from .catch_all import CatchAllScope
from .combined import Combined
from .duplicates import DuplicateIncidents
from .enumeration import GuessEnumeration
from .hindsight import HindsightRelabel
from .noop_actions import NoopRepair, RiskDilution
from .nudge import AlertNudge

__all__ = [
    "AlertNudge",
    "CatchAllScope",
    "Combined",
    "DuplicateIncidents",
    "GuessEnumeration",
    "HindsightRelabel",
    "NoopRepair",
    "RiskDilution",
    "attackers",
    "late_filing_at",
]


def late_filing_at(scenario: str, delta_s: float = DEFAULT_DELTA_S) -> float:
    """Virtual time of the last agent invocation of a run of `scenario`: the runner invokes every
    Δ from t = 0, `duration // Δ` times (warm-up excluded)."""
    duration = load_scenario(scenario).duration_s
    return (duration // delta_s - 1) * delta_s


def attackers(scenario: str, delta_s: float = DEFAULT_DELTA_S) -> dict[str, Callable[[], Agent]]:
    """Name -> factory of every attacker, late filers set to the run's last invocation. Fresh
    instances per run: attackers keep their memory in the run's workspace, not in the object."""
    late = late_filing_at(scenario, delta_s)
    return {
        "duplicate-incidents": lambda: DuplicateIncidents(file_at=late),
        "guess-enumeration": lambda: GuessEnumeration(file_at=late),
        "hindsight-relabel": lambda: HindsightRelabel(file_at=late),
        "hindsight-relabel-early": lambda: HindsightRelabel(file_at=late, relabel=True),
        "noop-repair": NoopRepair,
        "risk-dilution": RiskDilution,
        "catch-all-scope": CatchAllScope,
        "alert-nudge": AlertNudge,
        "combined": lambda: Combined(file_at=late),
    }
