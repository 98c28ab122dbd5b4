"""Exploit class 1: one alert in many incidents."""

from __future__ import annotations

from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage
from pytest_marathon.agents.workspace import load_state, save_state

from .common import due, file_incidents


class DuplicateIncidents:
    """Files `copies` identical incidents, each holding every alert, from `file_at` on.

    Steals Correlated: when an alert may sit in many incidents, every fault with any alert finds
    its own copy in a one-to-one matching, so the copies correlate (nearly) every fault without a
    single grouping decision. Under alert partitioning the report moves the alerts and the copies
    are one incident; filed after the evidence horizons, they are none.
    """

    name = "duplicate-incidents"
    description = "Attacker: N copies of one incident holding every alert (steals Correlated)"
    needs_ground_truth = False

    def __init__(self, copies: int = 70, file_at: float = 0.0) -> None:
        self.copies = copies
        self.file_at = file_at

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None:
        state = load_state(ctx.workspace, "duplicates.json", {})
        ids = due(ctx, self.file_at, state)
        if ids is not None:
            copies = [
                {"incident_id": f"dup-{k:03d}", "alert_ids": ids, "status": "open"}
                for k in range(1, self.copies + 1)
            ]
            file_incidents(ctx.tools, copies)
            save_state(ctx.workspace, "duplicates.json", state)
        return None
