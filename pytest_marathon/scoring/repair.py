"""Repaired: credit only recovery that the probe evidence shows after an agent intervention.

An intervention (target in P_f, or app-wide with no target, completed at c with inject_f <= c < revert_f) repairs f when
* the probe failed at some sample in [inject_f, revert_f): the samples from c to the last
  sample before revert_f end in a healthy stretch that starts at or after c, reaches that last
  sample, and spans at least 60 s (first to last healthy sample); the repair time is the
  stretch's first sample;
* the probe never failed: from the first sample at or after c whose `artifact_corrected` is
  true, every later sample before revert_f is corrected too; the repair time is that sample.
Samples at or after revert_f are the orchestrator's cleanup and never count.
c is the intervention's own `completed_at`, else that of its completion record (the runner's
`event: completed` record, merged in `evidence`); a change that never took effect repairs nothing.
"""

from __future__ import annotations

from .evidence import Fault, Intervention, ProbeSample, touches

HEALTHY_SPAN_S = 60.0


def repair_time(
    fault: Fault, interventions: list[Intervention], samples: list[ProbeSample]
) -> float | None:
    """Virtual time of the first verified repair of `fault`, or None."""
    completions = sorted(
        i.completed_at
        for i in interventions
        if i.ok
        and i.completed_at is not None
        and touches(i, fault.scope)
        and fault.inject_at <= i.completed_at < fault.revert_at
    )
    if not completions:
        return None
    during = [s for s in samples if fault.inject_at <= s.t < fault.revert_at]
    if not during:
        return None
    if any(not s.healthy for s in during):
        return _probe_recovery(during, completions)
    return _artifact_correction(during, completions)


def _probe_recovery(during: list[ProbeSample], completions: list[float]) -> float | None:
    last_failure = max(s.t for s in during if not s.healthy)
    stretch = [s.t for s in during if s.t > last_failure]
    if not stretch:
        return None
    for completed in completions:
        after = [t for t in stretch if t >= completed]
        if after and after[-1] - after[0] >= HEALTHY_SPAN_S:
            return after[0]
    return None


def _artifact_correction(during: list[ProbeSample], completions: list[float]) -> float | None:
    uncorrected = [s.t for s in during if not s.artifact_corrected]
    last_uncorrected = max(uncorrected, default=float("-inf"))
    for completed in completions:
        corrected = [s.t for s in during if s.t >= completed and s.t > last_uncorrected]
        if corrected:
            return corrected[0]
    return None


def acted_on(fault: Fault, interventions: list[Intervention]) -> bool:
    """Whether the agent executed any intervention on P_f while the fault was active."""
    return any(
        touches(i, fault.scope) and fault.inject_at <= i.t < fault.revert_at for i in interventions
    )
