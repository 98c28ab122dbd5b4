"""Service degradation D: degraded requests at the entry point, by the trapezoid rule."""

from __future__ import annotations

from ..bundle import Bundle
from .evidence import ScoreRefusal

#: Manifest fields that must agree for a no-action bundle to be the agent run's baseline.
BASELINE_FIELDS = ("release", "app", "scenario", "seed")


def degraded_requests(sli: list[tuple[float, float, float, float]]) -> float:
    """D = integral of min(1, e + l) * q dt over the recorded ticks (t, q, e, l), sorted."""
    total = 0.0
    for (t0, q0, e0, l0), (t1, q1, e1, l1) in zip(sli, sli[1:]):
        total += (t1 - t0) * (min(1.0, e0 + l0) * q0 + min(1.0, e1 + l1) * q1) / 2
    return total


def check_baseline(agent: Bundle, noop: Bundle) -> None:
    """Refuse a no-action bundle that is not of the same release, app, scenario and seed."""
    differing = [
        f"{name} {noop.manifest.get(name)!r} != {agent.manifest.get(name)!r}"
        for name in BASELINE_FIELDS
        if noop.manifest.get(name) != agent.manifest.get(name)
    ]
    if differing:
        raise ScoreRefusal(
            f"the no-action bundle {noop.path} is not the baseline of {agent.path}: "
            + "; ".join(differing)
        )
