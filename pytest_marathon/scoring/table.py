"""The human-readable rendering of a score document (the `--json` form is the contract)."""

from __future__ import annotations

from typing import Any

DASH = "-"


def _fixed(value: float | None, digits: int, suffix: str = "") -> str:
    return DASH if value is None else f"{value:.{digits}f}{suffix}"


def _seconds(timing: dict[str, Any]) -> str:
    median = timing["median_s"]
    return DASH if median is None else f"{median:.0f} s (n={timing['n']})"


def _metering_notes(cost: dict[str, Any]) -> str:
    """What the metering proxy flagged: calls refused at the budget, models without a price."""
    notes = []
    if cost.get("refused_calls"):
        notes.append(f"{cost['refused_calls']} calls refused at the budget")
    if cost.get("unpriced_models"):
        notes.append("unpriced: " + ", ".join(cost["unpriced_models"]))
    return f"; {'; '.join(notes)}" if notes else ""


def _self_recovery(check: dict[str, Any]) -> str:
    """How Repaired was checked against the no-action run (its counterfactual)."""
    if check["checked_against"] is None:
        return (
            f"NOT CHECKED (no no-action bundle): {check['unchecked']} repairs credited on the "
            "probe rule alone"
        )
    unchecked = f", {check['unchecked']} unchecked" if check["unchecked"] else ""
    return (
        f"checked against the {check['checked_against']} run: {check['withheld']} recoveries "
        f"it also shows withheld{unchecked}"
    )


def render_table(result: dict[str, Any]) -> str:
    run = result["run"]
    risk, degradation, cost = result["risk"], result["degradation"], result["cost"]
    diagnostics = result["diagnostics"]
    status = "complete" if run["complete"] else f"INCOMPLETE ({run['incomplete_reason']})"
    rows = [
        ("release", str(result["release"])),
        ("scorer", f"{result['scorer_version']} ({result['scored_by']})"),
        ("run", f"{run['app']} / {run['scenario']} / seed {run['seed']} / agent {run['agent']}"),
        ("bundle", status),
        ("faults", str(result["faults"])),
        ("Marathon-Score", _fixed(result["marathon_score"], 1)),
        ("Correlated", _fixed(result["correlated"], 3)),
        ("Located", _fixed(result["located"], 3)),
        ("Repaired", _fixed(result["repaired"], 3)),
        ("self-recovery", _self_recovery(result["self_recovery"])),
        ("forbidden attempted", "yes" if result["forbidden_attempted"] else "no"),
        (
            "Risk",
            f"{risk['value']:.3f} (exec {risk['n_exec']}, out {risk['n_out']}, "
            f"forbidden {risk['n_forb']})",
        ),
        ("degradation D", f"{degradation['d_agent']:.1f} degraded requests"),
        ("degradation level", _fixed(degradation["level_percent"], 1, " %")),
        ("MTTD", _seconds(result["timing"]["mttd"])),
        ("MTTL", _seconds(result["timing"]["mttl"])),
        ("MTTR", _seconds(result["timing"]["mttr"])),
        (
            "cost",
            f"{cost['model_calls']} calls, {cost['tokens']} tokens "
            f"({cost['input_tokens']} in, {cost['output_tokens']} out), ${cost['usd']:.2f}"
            + _metering_notes(cost),
        ),
        ("outcomes", ", ".join(f"{k} {v}" for k, v in result["outcomes"].items())),
        (
            "diagnostics",
            f"incident precision {_fixed(diagnostics['incident_precision'], 2)} "
            f"({diagnostics['incidents_matched']} of {diagnostics['incidents_with_alerts']}), "
            f"{diagnostics['reports_after_horizon']} reports after the horizon, "
            f"{diagnostics['noop_changes']} no-op changes",
        ),
        (
            "invocations",
            ", ".join(f"{k} {v}" for k, v in diagnostics["invocation_outcomes"].items()) or DASH,
        ),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {value}" for name, value in rows]
    lines.append("")
    lines.append("time bin      inv  reads  acts  reports  injected  corr   loc    rep")
    for row in result["bins"]:
        lines.append(
            f"{row['start'] / 60:>4.0f}-{row['end'] / 60:<4.0f}min "
            f"{row['invocations']:>4} {_fixed(row['reads_per_invocation'], 1):>6} "
            f"{_fixed(row['actions_per_invocation'], 1):>5} "
            f"{_fixed(row['reports_per_invocation'], 1):>8} {row['faults_injected']:>9}  "
            f"{_fixed(row['correlated'], 2):>5} {_fixed(row['located'], 2):>5} "
            f"{_fixed(row['repaired'], 2):>5}"
        )
    return "\n".join(lines) + "\n"
