"""The no-action baseline: its run is the denominator of every degradation level."""

from __future__ import annotations

from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage


class NoopAgent:
    name = "noop"
    description = "Does nothing; its run is the no-action baseline degradation is measured against"
    uses_models = False  # runs without a metering proxy
    needs_ground_truth = False

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None:
        return None
