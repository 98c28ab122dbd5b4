"""score_bundle: every SRE-Marathon metric from a bundle alone (ARCHITECTURE.md section 7).

The output is the stable JSON document described in docs/score-json.md; nothing in it depends
on line order within a stream, on the names the agent gave its incidents, or on wall time.
"""

from __future__ import annotations

import math
import os
from typing import Any

from .. import __version__
from ..bundle import Bundle, read_bundle
from .activity import time_bins
from .counterfactual import SELF_RECOVERED, UNCHECKED, check_same_schedule, judge
from .degradation import check_baseline, degraded_requests
from .evidence import Evidence, Fault, ScoreRefusal, load_evidence, located, recorded_run_end
from .horizon import IncidentActivity, fault_views
from .matching import match
from .recovery import schedule_records
from .repair import acted_on
from .risk import forbidden_attempts, risk
from .salt import committed_salt, verified_run_salt

#: Bumped whenever a definition changes, so that two scores can be told comparable or not.
SCORER_VERSION = "2.1"
SCORE_SCHEMA_VERSION = 2
OUTCOMES = (
    "handled",
    "repaired-not-located",
    "acted-not-repaired",
    "located-no-action",
    "correlated-only",
    "missed",
)

BundleLike = Bundle | str | os.PathLike[str]


def _open(bundle: BundleLike, allow_incomplete: bool, verify_key: Any = None) -> Bundle:
    if isinstance(bundle, Bundle) and verify_key is None:
        if not bundle.complete and not allow_incomplete:
            raise ScoreRefusal(
                f"{bundle.path} is an incomplete bundle; pass allow_incomplete to score it"
            )
        return bundle
    path = bundle.path if isinstance(bundle, Bundle) else bundle  # a trusted key: re-verify
    return read_bundle(path, allow_incomplete=allow_incomplete, verify_key=verify_key)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def median_time(values: list[float]) -> float | None:
    """The ceil(0.5 n)-th smallest value, so the median is always an observed time."""
    if not values:
        return None
    return sorted(values)[math.ceil(0.5 * len(values)) - 1]


def _outcome(a: bool, b: bool, c: bool, acted: bool) -> str:
    if a and b and c:
        return "handled"
    if c:
        return "repaired-not-located"
    if acted:
        return "acted-not-repaired"
    if b:
        return "located-no-action"
    if a:
        return "correlated-only"
    return "missed"


def score_bundle(
    bundle_or_path: BundleLike,
    noop: BundleLike | None = None,
    allow_incomplete: bool = False,
    verify_key: Any = None,
    seed_salt: str | None = None,
) -> dict[str, Any]:
    """Score one bundle (optionally against its no-action baseline bundle).

    A salted bundle's revealed salt must match its commitment. A killed run's bundle (`running`,
    with `allow_incomplete`) has no schedule: it is redrawn from the manifest's seed, the run
    salt derived from `seed_salt` (the session's salt; required for a salted run) and the
    installed catalog, which must be the one the run used (scoring/recovery.py).

    The noop bundle is also the self-recovery counterfactual (scoring/counterfactual.py): a
    recovery it shows by the agent's repair time earns no repair. Without it, repairs are
    credited on the probe rule alone and `self_recovery.unchecked` counts them.

    Raises BundleError when a bundle cannot be trusted and ScoreRefusal when the request
    cannot be honoured (incomplete without `allow_incomplete`, mismatched baseline or salt)."""
    bundle = _open(bundle_or_path, allow_incomplete, verify_key)
    if bundle.manifest.get("mode") == "episodic":
        raise ScoreRefusal(f"{bundle.path} is an episode bundle (one problem, not a marathon): "
                           "score it with `pytest-marathon episode --score BUNDLE`")
    baseline = None if noop is None else _open(noop, allow_incomplete, verify_key)
    run_salt = verified_run_salt(bundle, seed_salt)
    if baseline is not None:
        check_baseline(bundle, baseline)
    salted = committed_salt(bundle.manifest) is not None
    schedule, redrawn = schedule_records(
        bundle, recorded_run_end(bundle), salted=salted, run_salt=run_salt
    )
    evidence = load_evidence(bundle, schedule)
    counterfactual = None if baseline is None else _baseline_evidence(baseline, salted, seed_salt)
    if counterfactual is not None:
        check_same_schedule(evidence, counterfactual)

    views, activity = fault_views(evidence)
    matched = match(evidence.faults, {f: view.candidates for f, view in views.items()})

    per_fault = []
    stage_times: dict[str, dict[str, float | None]] = {}
    for fault in evidence.faults:
        view = views[fault.fault_id]
        incident = matched.get(fault.fault_id)
        a = incident is not None
        b = incident is not None and located(fault, view.diagnoses[incident])
        samples = evidence.probes.get(fault.fault_id, [])
        verdict, repaired_at = judge(fault, evidence.interventions, samples, counterfactual)
        c = repaired_at is not None
        detected_at = view.detected_at if a else None
        located_at = view.located_at if b else None
        stage_times[fault.fault_id] = {
            "detected": detected_at,
            "located": located_at,
            "repaired": repaired_at,
        }
        per_fault.append(
            {
                "fault_id": fault.fault_id,
                "catalog_id": fault.catalog_id,
                "category": fault.category,
                "inject_at": _round(fault.inject_at),
                "revert_at": _round(fault.revert_at) if fault.reverted else None,
                "horizon": _round(fault.horizon),
                "incident_id": incident,
                "correlated": a,
                "located": b,
                "repaired": c,
                "credit": _round(int(a) * (1 + int(b) + int(c)) / 3),
                "repair_counterfactual": verdict,
                "outcome": _outcome(a, b, c, acted_on(fault, evidence.interventions)),
                "attributable_alerts": len(evidence.attributable[fault.fault_id]),
                "time_to_detect_s": _elapsed(detected_at, fault),
                "time_to_locate_s": _elapsed(located_at, fault),
                "time_to_repair_s": _elapsed(repaired_at, fault),
            }
        )

    n = len(per_fault)
    forbidden = forbidden_attempts(evidence) > 0
    credit = sum(
        row["correlated"] * (1 + row["located"] + row["repaired"]) / 3 for row in per_fault
    )
    score = 100 * 0.5 ** int(forbidden) * credit / n if n else None
    d_agent = degraded_requests(evidence.sli)
    d_noop = None if counterfactual is None else degraded_requests(counterfactual.sli)
    level = None if not d_noop else 100 * d_agent / d_noop
    risky = risk(evidence)
    manifest = bundle.manifest
    return {
        "schema_version": SCORE_SCHEMA_VERSION,
        "scorer_version": SCORER_VERSION,
        "scored_by": f"pytest-marathon {__version__}",
        "release": manifest.get("release"),
        "run": {
            "app": manifest.get("app"),
            "scenario": manifest.get("scenario"),
            "seed": manifest.get("seed"),
            "agent": manifest.get("agent"),
            "agent_flags": manifest.get("agent_flags") or {},
            "backend": manifest.get("backend"),
            "complete": bundle.complete,
            "incomplete_reason": manifest.get("incomplete_reason"),
            "content_digest": bundle.content_digest,
            "signature": bundle.signature,
            "seed_salt_commitment": committed_salt(manifest),
            "schedule_redrawn": redrawn,
        },
        "faults": n,
        "marathon_score": _round(score),
        "correlated": _round(sum(r["correlated"] for r in per_fault) / n) if n else None,
        "located": _round(sum(r["located"] for r in per_fault) / n) if n else None,
        "repaired": _round(sum(r["repaired"] for r in per_fault) / n) if n else None,
        "self_recovery": {
            "checked_against": None if baseline is None else baseline.manifest.get("agent"),
            "withheld": sum(r["repair_counterfactual"] == SELF_RECOVERED for r in per_fault),
            "unchecked": sum(r["repair_counterfactual"] == UNCHECKED for r in per_fault),
        },
        "forbidden_attempted": forbidden,
        "risk": {
            "value": _round(risky.value),
            "n_exec": risky.n_exec,
            "n_out": risky.n_out,
            "n_forb": risky.n_forb,
        },
        "degradation": {
            "d_agent": _round(d_agent),
            "d_noop": _round(d_noop),
            "level_percent": _round(level),
            "noop_agent": None if baseline is None else baseline.manifest.get("agent"),
        },
        "timing": {
            name: _timing([r[key] for r in per_fault if r[key] is not None])
            for name, key in (
                ("mttd", "time_to_detect_s"),
                ("mttl", "time_to_locate_s"),
                ("mttr", "time_to_repair_s"),
            )
        },
        "cost": _cost(evidence),
        "outcomes": {name: sum(r["outcome"] == name for r in per_fault) for name in OUTCOMES},
        "diagnostics": _diagnostics(evidence, activity, matched),
        "per_fault": per_fault,
        "bins": [
            {
                key: _round(value) if isinstance(value, float) else value
                for key, value in row.items()
            }
            for row in time_bins(evidence, stage_times)
        ],
    }


def _baseline_evidence(baseline: Bundle, salted: bool, seed_salt: str | None) -> Evidence:
    """The no-action run's evidence, its schedule read (or, killed, redrawn) as the run's is:
    the self-recovery counterfactual compares the same faults' probes."""
    base_salt = verified_run_salt(baseline, seed_salt)
    try:
        schedule, _ = schedule_records(
            baseline, recorded_run_end(baseline), salted=salted, run_salt=base_salt
        )
    except ScoreRefusal:  # a killed baseline that cannot be redrawn: its faults are `unchecked`
        schedule = baseline.stream("schedule")
    return load_evidence(baseline, schedule)


def _diagnostics(
    evidence: Evidence, activity: IncidentActivity, matched: dict[str, str]
) -> dict[str, Any]:
    """What the score does not reward but a reader should see: how many incidents matched no
    fault, reports that came after every horizon they could have counted for, no-op changes and
    how the invocations ended."""
    filed = len(activity.incidents_with_alerts)
    statuses: dict[str, int] = {}
    for record in evidence.invocations:
        status = str(record.get("status") or "ok")
        statuses[status] = statuses.get(status, 0) + 1
    return {
        "incidents_with_alerts": filed,
        "incidents_matched": len(set(matched.values())),
        "incident_precision": _round(len(set(matched.values())) / filed) if filed else None,
        "reports_after_horizon": activity.reports_after_horizon,
        "noop_changes": sum(1 for i in evidence.interventions if not i.changed),
        "invocation_outcomes": dict(sorted(statuses.items())),
    }


def _elapsed(when: float | None, fault: Fault) -> float | None:
    return None if when is None else _round(max(0.0, when - fault.inject_at))


def _timing(values: list[float]) -> dict[str, Any]:
    return {"median_s": _round(median_time(values)), "n": len(values)}


def _cost(evidence: Evidence) -> dict[str, Any]:
    def total(field: str) -> float:
        return sum(float(r.get(field) or 0) for r in evidence.invocations)

    input_tokens, output_tokens = int(total("input_tokens")), int(total("output_tokens"))
    return {
        "invocations": len(evidence.invocations),
        "model_calls": int(total("model_calls")),
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "tokens": input_tokens + output_tokens,
        "usd": _round(total("cost_usd")),
        # metering proxy: calls refused at the run's budget, models without a price
        "refused_calls": int(total("refused_calls")),
        "unpriced_models": sorted(
            {str(m) for r in evidence.invocations for m in r.get("unpriced_models") or ()}
        ),
    }


__all__ = ["OUTCOMES", "SCORER_VERSION", "ScoreRefusal", "median_time", "score_bundle"]
