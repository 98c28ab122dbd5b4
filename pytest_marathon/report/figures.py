"""The report's figures, drawn with matplotlib from a bundle's streams and returned as PNG bytes.

The timeline follows the paper's Figures 1 and 6: one bar per fault from injection to revert,
coloured by category, with the alerts that fired, the agent's incident reports and actions on
their own lanes, and the user-facing degradation (min{1, e + l} · q) of the agent's run against
the no-action run below. The outcome chart is Figure 9: the share of faults per outcome.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")

from matplotlib import pyplot as plt  # noqa: E402 - the backend must be chosen first
from matplotlib.patches import Patch  # noqa: E402

from pytest_marathon.scoring.evidence import COMPLETED_EVENT  # noqa: E402

CATEGORY_COLOURS = {
    "code": "#d62728",
    "dependency": "#9467bd",
    "infrastructure": "#8c564b",
    "deployment": "#ff7f0e",
    "configuration": "#1f77b4",
    "database-network": "#17becf",
    "authentication": "#bcbd22",
}
OUTCOME_COLOURS = {
    "handled": "#2ca02c",
    "repaired-not-located": "#98df8a",
    "acted-not-repaired": "#ffbb78",
    "located-no-action": "#aec7e8",
    "correlated-only": "#c7c7c7",
    "missed": "#7f7f7f",
}


def _colour(category: str) -> str:
    for key, colour in CATEGORY_COLOURS.items():
        if category.startswith(key.split("-")[0]):
            return colour
    return "#333333"


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()


def degradation_curve(sli: Sequence[Mapping[str, Any]]) -> tuple[list[float], list[float]]:
    """Minutes and min{1, e + l} · q per recorded tick from t = 0 (the scored window)."""
    points = [r for r in sli if r["t"] >= 0]
    return (
        [r["t"] / 60 for r in points],
        [min(1.0, r["e"] + r["l"]) * r["q"] for r in points],
    )


def timeline_png(
    title: str,
    streams: Mapping[str, Sequence[Mapping[str, Any]]],
    noop_sli: Sequence[Mapping[str, Any]] | None,
    horizon_s: float,
) -> bytes:
    schedule = sorted(streams.get("schedule", ()), key=lambda r: (r["inject_at"], r["fault_id"]))
    figure, (top, bottom) = plt.subplots(
        2, 1, figsize=(12, 3.2 + 0.18 * len(schedule)), sharex=True,
        gridspec_kw={"height_ratios": [3, 1]},
    )
    lanes = {"actions": -1, "reports": -2, "alerts": -3}
    for row, fault in enumerate(schedule):
        end = fault.get("revert_at") or horizon_s
        top.barh(
            row, (end - fault["inject_at"]) / 60, left=fault["inject_at"] / 60, height=0.7,
            color=_colour(fault.get("category", "")), alpha=0.85,
        )
        top.text(end / 60 + 0.3, row, f"{fault['fault_id']} {fault.get('target', '')}",
                 va="center", fontsize=6)
    fired = [a["t"] / 60 for a in streams.get("alerts", ()) if a.get("event") == "firing"]
    top.scatter(fired, [lanes["alerts"]] * len(fired), marker="|", color="#d62728", s=60)
    reported = [r["t"] / 60 for r in streams.get("reports", ())]
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
    categories = sorted({f.get("category", "") for f in schedule})
    top.legend(
        handles=[Patch(color=_colour(c), label=c) for c in categories],
        fontsize=7, loc="lower right", ncols=min(4, max(1, len(categories))),
    )
    minutes, impact = degradation_curve(streams.get("sli", ()))
    bottom.plot(minutes, impact, color="#d62728", linewidth=1, label="agent")
    if noop_sli:
        noop_minutes, noop_impact = degradation_curve(noop_sli)
        bottom.plot(noop_minutes, noop_impact, color="#7f7f7f", linewidth=1, linestyle="--",
                    label="no action")
    bottom.set_ylabel("degraded req/s", fontsize=8)
    bottom.set_xlabel("virtual minute", fontsize=8)
    bottom.legend(fontsize=7, loc="upper right")
    bottom.set_xlim(0, horizon_s / 60)
    return _png(figure)


def outcomes_png(rows: Sequence[tuple[str, Mapping[str, int]]]) -> bytes:
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
    axes.legend(
        handles=[Patch(color=c, label=o) for o, c in OUTCOME_COLOURS.items()],
        fontsize=7, ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.35),
    )
    return _png(figure)
