"""The report's figures, drawn with matplotlib from a bundle's streams and returned as SVG text.

The timeline follows the paper's Figures 1 and 6: one bar per fault from injection to revert,
coloured by what the agent achieved on it (its outcome) and labelled with its id, category and
target, with the alerts that fired, the agent's incident reports and actions on their own lanes,
and the user-facing degradation (min{1, e + l} · q) of the agent's run against the no-action run
below. The outcome chart is Figure 9: the share of faults per outcome.

SVG rather than PNG: it stays sharp when zoomed, its text can be searched, and with text kept as
text (not glyph paths) a 60-fault timeline is a few tens of kilobytes, so a report of twenty runs
stays small enough to attach to a CI run. Legends sit outside the axes so they hide no data.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")

from matplotlib import pyplot as plt  # noqa: E402 - the backend must be chosen first
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from pytest_marathon.scoring.evidence import COMPLETED_EVENT  # noqa: E402

OUTCOME_COLOURS = {
    "handled": "#2ca02c",
    "repaired-not-located": "#98df8a",
    "acted-not-repaired": "#ffbb78",
    "located-no-action": "#aec7e8",
    "correlated-only": "#c7c7c7",
    "missed": "#7f7f7f",
}


def _svg(figure: Any) -> str:
    """The figure as an inline `<svg>` element (no XML prolog, text kept as text)."""
    buffer = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "pytest-marathon"}):
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


#: The degradation curve is drawn at this resolution (virtual seconds), each point the worst of
#: its bucket, so a short spike survives while a 90-minute curve stays a few hundred points.
CURVE_BUCKET_S = 30.0


def degradation_curve(sli: Sequence[Mapping[str, Any]]) -> tuple[list[float], list[float]]:
    """Minutes and the worst min{1, e + l} · q of each 30 s bucket from t = 0 (the scored
    window)."""
    worst: dict[int, float] = {}
    for record in sli:
        if record["t"] >= 0:
            bucket = int(record["t"] // CURVE_BUCKET_S)
            value = min(1.0, record["e"] + record["l"]) * record["q"]
            worst[bucket] = max(value, worst.get(bucket, 0.0))
    buckets = sorted(worst)
    return [b * CURVE_BUCKET_S / 60 for b in buckets], [worst[b] for b in buckets]


def timeline_svg(
    title: str,
    streams: Mapping[str, Sequence[Mapping[str, Any]]],
    noop_sli: Sequence[Mapping[str, Any]] | None,
    horizon_s: float,
    outcomes: Mapping[str, str],
) -> str:
    """`outcomes`: fault id -> outcome class (the scorer's); a fault without one is `missed`."""
    schedule = sorted(streams.get("schedule", ()), key=lambda r: (r["inject_at"], r["fault_id"]))
    figure, (top, bottom) = plt.subplots(
        2, 1, figsize=(12, 3.2 + 0.18 * len(schedule)), sharex=True,
        gridspec_kw={"height_ratios": [3, 1]},
    )
    lanes = {"actions": -1, "reports": -2, "alerts": -3}
    for row, fault in enumerate(schedule):
        end = fault.get("revert_at") or horizon_s
        outcome = outcomes.get(fault["fault_id"], "missed")
        top.barh(
            row, (end - fault["inject_at"]) / 60, left=fault["inject_at"] / 60, height=0.7,
            color=OUTCOME_COLOURS.get(outcome, "#333333"), edgecolor="#555555", linewidth=0.4,
        )
        label = f"{fault['fault_id']} {fault.get('category', '')} {fault.get('target', '')}"
        top.text(end / 60 + 0.3, row, label, va="center", fontsize=6)
    # one marker per moment on the event lanes: alerts fire together at an evaluation and a
    # report call files many incidents, and stacked copies only bloat the figure
    fired = sorted({a["t"] / 60 for a in streams.get("alerts", ()) if a.get("event") == "firing"})
    top.scatter(fired, [lanes["alerts"]] * len(fired), marker="|", color="#d62728", s=60)
    reported = sorted({r["t"] / 60 for r in streams.get("reports", ())})
    top.scatter(reported, [lanes["reports"]] * len(reported), marker="o", color="#1f77b4", s=12)
    acted = [a for a in streams.get("interventions", ()) if a.get("event") != COMPLETED_EVENT]
    top.scatter(
        [a["t"] / 60 for a in acted], [lanes["actions"]] * len(acted), marker="^",
        c=["#2ca02c" if a.get("ok") else "#7f7f7f" for a in acted], s=24,
    )
    top.set_yticks([*lanes.values(), *range(len(schedule))],
                   ["actions", "reports", "alerts", *([""] * len(schedule))])
    top.set_ylim(-3.8, max(len(schedule), 1) - 0.2)
    top.invert_yaxis()
    top.set_title(title, fontsize=10)
    top.tick_params(axis="x", labelbottom=True, labelsize=7)  # minutes under the faults too
    top.grid(axis="x", color="#eeeeee", linewidth=0.6)
    shown = [o for o in OUTCOME_COLOURS if o in {outcomes.get(f["fault_id"], "missed")
                                                    for f in schedule}]
    handles = [
        *(Patch(color=OUTCOME_COLOURS[o], label=o) for o in shown),
        Line2D([], [], color="#d62728", marker="|", linestyle="", label="alert fired"),
        Line2D([], [], color="#1f77b4", marker="o", linestyle="", markersize=4,
               label="incident report"),
        Line2D([], [], color="#2ca02c", marker="^", linestyle="", label="action ok"),
        Line2D([], [], color="#7f7f7f", marker="^", linestyle="", label="action refused/failed"),
    ]
    top.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
               borderaxespad=0.0)
    minutes, impact = degradation_curve(streams.get("sli", ()))
    bottom.plot(minutes, impact, color="#d62728", linewidth=1, label="agent")
    if noop_sli:
        noop_minutes, noop_impact = degradation_curve(noop_sli)
        bottom.plot(noop_minutes, noop_impact, color="#7f7f7f", linewidth=1, linestyle="--",
                    label="no action")
    bottom.set_ylabel("degraded req/s", fontsize=8)
    bottom.set_xlabel("virtual minute", fontsize=8)
    bottom.tick_params(labelsize=7)
    bottom.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    bottom.set_xlim(0, horizon_s / 60)
    return _svg(figure)


def outcomes_svg(rows: Sequence[tuple[str, Mapping[str, int]]]) -> str:
    """One horizontal 100 % bar per run (label, outcome -> count), in the outcome order."""
    figure, axes = plt.subplots(figsize=(10, 0.9 + 0.35 * len(rows)))
    for index, (_, counts) in enumerate(rows):
        total = sum(counts.values()) or 1
        left = 0.0
        for outcome, colour in OUTCOME_COLOURS.items():
            share = 100 * counts.get(outcome, 0) / total
            if share:
                axes.barh(index, share, left=left, color=colour, height=0.7)
                left += share
    axes.set_yticks(range(len(rows)), [label for label, _ in rows], fontsize=7)
    axes.invert_yaxis()
    axes.set_xlim(0, 100)
    axes.set_xlabel("share of injected faults (%)", fontsize=8)
    axes.tick_params(axis="x", labelsize=7)
    axes.legend(
        handles=[Patch(color=c, label=o) for o, c in OUTCOME_COLOURS.items()],
        fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
    )
    return _svg(figure)
