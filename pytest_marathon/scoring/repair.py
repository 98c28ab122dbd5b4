"""Repaired: credit only a change of the agent's that the evidence shows fixed the fault.

An intervention repairs fault f (ARCHITECTURE.md section 7) when it
(a) changed state: a no-op (a value the system already had) is listed, never credited;
(b) targets a workload in P_f (a flag change targets only the services reading the flag);
(c) was issued while f was still failing: the probe had not yet recovered for good, i.e. some
    sample at or after the action's time is unhealthy (for a fault whose probe never failed:
    its artifact still read faulty at or after it), so a fault that had already recovered by
    itself is never credited to a later action. This reads "still failing" as "not yet
    recovered" rather than "the last sample before the action failed": a fault whose symptom
    comes and goes (a CPU backlog draining and filling) is still failing during a healthy blip;
(d) completed at c with inject_f <= c < revert_f (c: its own `completed_at`, else that of its
    completion record; a change that never took effect repairs nothing);
(e) afterwards the probe is healthy at some sample >= c and at every later sample before
    revert_f (never failed: the artifact reads corrected from some sample >= c to revert_f);
(f) the recovery needed the agent: the no-action run of the same schedule had not recovered for
    good by then (scoring/counterfactual.py). A recovery that follows an action is not caused
    by it: an OOM-killed pod restarts and a chaos experiment ends whoever acts meanwhile.
Only samples in [inject_f, revert_f) are read, so (e) implies (d): no separate check.
The repair time is that first sample. Samples at or after revert_f are the benchmark's cleanup
and never count, so the orchestrator's revert can never pass for the agent's repair.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .evidence import Fault, Intervention, ProbeSample, touches


@dataclass(frozen=True)
class Recovery:
    """A recovery the probe evidence verifies after an agent's change, conditions (a)-(e)."""

    at: float  # the first sample of the final good stretch at or after the change completed
    by_symptom: bool  # read on probe health (True) or, for a never-failing probe, the artifact

    def good(self, sample: ProbeSample) -> bool:
        """Whether a sample reads recovered on the criterion this recovery was verified on."""
        return sample.healthy if self.by_symptom else sample.artifact_corrected


def samples_during(fault: Fault, samples: list[ProbeSample]) -> list[ProbeSample]:
    """The samples the repair rule reads: [inject_f, revert_f), never the cleanup after it."""
    return [s for s in samples if fault.inject_at <= s.t < fault.revert_at]


def verified_recovery(
    fault: Fault,
    interventions: list[Intervention],
    samples: list[ProbeSample],
    by_symptom: bool | None = None,
) -> Recovery | None:
    """The earliest recovery that follows a change of the agent's on P_f, by the probe rule
    alone (conditions (a)-(e)); None when there is none. Whether the agent was needed for it
    is the counterfactual's question (condition (f)). `by_symptom` None reads the probe when it
    failed and the artifact otherwise; False reads the artifact whatever the probe did."""
    during = samples_during(fault, samples)
    if by_symptom is None:
        by_symptom = any(not s.healthy for s in during)
    criterion = Recovery(0.0, by_symptom)
    stays_good_from = final_good_stretch(during, criterion.good)
    if stays_good_from is None or stays_good_from == 0:
        return None  # never good at the end, or never bad: nothing was repaired
    last_bad = during[stays_good_from - 1].t
    times = []
    for action in interventions:
        if not (action.ok and action.completed_at is not None and touches(action, fault.scope)):
            continue
        if action.t > last_bad:
            continue  # the fault had recovered for good before the action was issued
        after = [s.t for s in during[stays_good_from:] if s.t >= action.completed_at]
        if after:
            times.append(after[0])
    return None if not times else Recovery(min(times), by_symptom)


def final_good_stretch(
    during: list[ProbeSample], good: Callable[[ProbeSample], bool]
) -> int | None:
    """Index of the first sample from which every sample up to the revert is good; None when
    the last sample is not good (or there is none)."""
    start = len(during)
    while start > 0 and good(during[start - 1]):
        start -= 1
    return None if start == len(during) else start


def acted_on(fault: Fault, interventions: list[Intervention]) -> bool:
    """Whether the agent changed anything on P_f while the fault was active."""
    return any(
        touches(i, fault.scope) and fault.inject_at <= i.t < fault.revert_at for i in interventions
    )
