"""Plug-in agents (`module:Class`) for the isolation tests, run in their child process."""

from __future__ import annotations

import time
from typing import Any

from pytest_marathon.agents.runbook import RunbookAgent

from intruders.attacks import attempt


class Intruder:
    """The Runbook, after trying every attack at each invocation; a leak crashes the
    invocation with what leaked (so a leak shows in the bundle and changes the score)."""

    name = "intruder"
    description = "tries to read the answers and reach the runner, then acts as the Runbook"

    def __init__(self) -> None:
        self.inner = RunbookAgent()

    def invoke(self, ctx: Any) -> Any:
        leaks = attempt()
        if leaks:
            raise RuntimeError("leaked: " + ", ".join(leaks))
        return self.inner.invoke(ctx)


class Honest(RunbookAgent):
    """The same Runbook without the attempts, as a plug-in too."""

    name = "honest"


class Runaway:
    """Never returns from its first invocation (a busy loop: no sleep to interrupt), then
    behaves; the runner must kill it at the budget and start afresh."""

    name = "runaway"
    description = "spins forever at its first invocation"
    uses_models = False  # no metering proxy: the usage it reports is what is recorded

    def __init__(self) -> None:
        self.invocations = 0

    def invoke(self, ctx: Any) -> Any:
        self.invocations += 1
        if ctx.n == 1:
            while True:
                time.monotonic()
        return {"model_calls": self.invocations}
