"""Self-recovery: a recovery the no-action run also shows by then is not the agent's repair.

ARCHITECTURE.md section 7 never credits self-recovery, and the probe rule alone cannot tell it
from a repair: an OOM-killed pod restarts and a chaos experiment runs out whoever happens to act
on the service meanwhile, so an agent making any harmless change in P_f before such a fault
heals would be paid for the healing. Whether the change was needed is a counterfactual, and the
bundle set already records it: the no-action (noop) bundle the degradation level is measured
against is the same release, app, scenario, seed, backend, run configuration and seed-salt
commitment (scoring/degradation.py, `check_baseline`), so the same schedule played out with
nobody acting, its probes sampled on the same grid.

The rule, on recorded evidence only and with no tolerance to tune: let r be the repair time
the probe rule verified in the agent's run (scoring/repair.py, conditions (a)-(e)) and read the
no-action run's samples of the same fault in [inject_f, revert_f) on the same criterion (probe
health, or the artifact for a probe that never failed in the agent's run). When they are good
from some sample at t <= r through the last one before the revert, the fault had recovered for
good by r with nobody acting: it self-recovered and c_f = 0. When the no-action run recovers
only after r, or never before its revert, the agent made it happen: the repair is credited.
A no-action run whose probe never failed shows no symptom to recover from: another live fault
may hide this one's signature there (a request failing upstream never reaches the faulty code),
or the symptom appears only where someone acted. Then, as the paper does for a fault whose
symptom was never observed, the artifact decides: the agent's change must have corrected it
(conditions (a)-(e) read on `artifact_corrected`) before the no-action run's artifact read
corrected for good; a symptom that merely came and went around the change earns nothing.

Without counterfactual evidence (no noop bundle given, or one that stopped before the fault's
last sample, or never injected it) the fault is credited on conditions (a)-(e) alone and marked
`unchecked`; the score counts those (`self_recovery.unchecked`), so a Rep scored without a
baseline reads as an upper bound and says so. A noop bundle whose schedule differs from the
run's for a fault both hold is refused: its probes would describe another world.
"""

from __future__ import annotations

from .evidence import Evidence, Fault, Intervention, ProbeSample, ScoreRefusal
from .repair import Recovery, final_good_stretch, samples_during, verified_recovery

#: `per_fault[].repair_counterfactual` of a fault whose verified recovery is credited.
NEEDED = "needed"
#: ... of one whose verified recovery the no-action run also showed by then: not credited.
SELF_RECOVERED = "self-recovered"
#: ... of one credited on the probe rule alone: there was no no-action evidence to compare.
UNCHECKED = "unchecked"


def check_same_schedule(run: Evidence, baseline: Evidence) -> None:
    """Refuse a baseline that injected a fault of the run differently (another catalog entry,
    another injection or revert time): salt and configuration matched, so the bytes did not."""
    theirs = {f.fault_id: f for f in baseline.faults}
    for fault in run.faults:
        other = theirs.get(fault.fault_id)
        if other is None:
            continue  # a baseline that stopped before this injection: `unchecked`, not refused
        differs = (other.catalog_id, other.inject_at) != (fault.catalog_id, fault.inject_at) or (
            other.reverted and fault.reverted and other.revert_at != fault.revert_at
        )
        if differs:
            raise ScoreRefusal(
                f"the no-action bundle's schedule differs from the scored run's at "
                f"{fault.fault_id} ({other.catalog_id} at {other.inject_at:g}-{other.revert_at:g} "
                f"against {fault.catalog_id} at {fault.inject_at:g}-{fault.revert_at:g}): it is "
                "not the same schedule played out without actions"
            )


def healed_at(samples: list[ProbeSample], criterion: Recovery) -> float | None:
    """When the samples read good on `criterion` for good (through the last one), or None."""
    start = final_good_stretch(samples, criterion.good)
    return None if start is None else samples[start].t


def judge(
    fault: Fault,
    interventions: list[Intervention],
    samples: list[ProbeSample],
    baseline: Evidence | None,
) -> tuple[str | None, float | None]:
    """(verdict, repair time) of `fault` in the run whose samples of it are `samples`: (None,
    None) when the probe rule verifies no recovery after a change of the agent's; else NEEDED or
    UNCHECKED with the repair time, or (SELF_RECOVERED, None), against the no-action run."""
    recovery = verified_recovery(fault, interventions, samples)
    if recovery is None:
        return None, None
    if baseline is None or fault.fault_id not in {f.fault_id for f in baseline.faults}:
        return UNCHECKED, recovery.at
    ours = samples_during(fault, samples)
    theirs = samples_during(fault, baseline.probes.get(fault.fault_id, []))
    if not theirs or baseline.run_end < ours[-1].t:
        return UNCHECKED, recovery.at  # the no-action run did not record this fault as long
    if recovery.by_symptom and all(s.healthy for s in theirs):
        recovery = verified_recovery(fault, interventions, samples, by_symptom=False)
        if recovery is None:
            return SELF_RECOVERED, None  # no symptom without action, and no artifact corrected
    alone = healed_at(theirs, recovery)
    if alone is not None and alone <= recovery.at:
        return SELF_RECOVERED, None
    return NEEDED, recovery.at
