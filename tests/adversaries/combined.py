"""All of it at once: the issue's 80.6 agent."""

from __future__ import annotations

from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage

from .catch_all import CatchAllScope
from .enumeration import GuessEnumeration
from .noop_actions import NoopRepair


class Combined:
    """No-op flag sets and blanket restarts/rollbacks citing one catch-all incident at every
    invocation, then guess enumeration filed from `file_at` on.

    Steals Correlated and Located (enumeration), Repaired (no-op flags and blanket actions) and
    Risk (the catch-all incident) together, with no diagnosis at all.
    """

    name = "combined"
    description = "Attacker: guess enumeration + no-op flag sets + catch-all blanket actions (steals everything)"
    needs_ground_truth = False

    def __init__(self, file_at: float = 0.0, incident_id: str = "catch-all") -> None:
        self.parts = (
            NoopRepair(kinds=("flag",), incident_id=incident_id),
            CatchAllScope(incident_id=incident_id),
            GuessEnumeration(file_at=file_at),
        )

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None:
        for part in self.parts:
            part.invoke(ctx)
        return None
