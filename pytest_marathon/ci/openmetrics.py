"""The OpenMetrics text file GitLab's metrics report reads (`--marathon-openmetrics PATH`).

GitLab shows each sample (name and labels) of the merge request's file beside the target
branch's, so every run is one sample per metric, labelled by what identifies the run (agent,
app, scenario, seed), and each agent x app row of the leaderboard adds its mean over seeds. All
families are gauges: a score is a level, not a count. Metrics a run did not reach are left out
rather than written as NaN, which would read as a change on every comparison.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path

from pytest_marathon.results import METRICS, MarathonResult, leaderboard

_HELP = {
    "score": "marathon score, 0 to 100",
    "correlated": "share of faults whose alerts were grouped into a matching incident",
    "located": "share of faults whose root cause was located",
    "repaired": "share of faults the agent repaired",
    "risk": "Risk: out-of-scope or forbidden changes over all changes and forbidden calls",
    "degradation_pct": "user-facing degradation, percent of the no-action run",
    "mttd_s": "median time to detect, seconds",
    "mttl_s": "median time to locate, seconds",
    "mttr_s": "median time to repair, seconds",
    "model_calls": "model calls made by the agent",
    "tokens": "model tokens used by the agent",
    "cost_usd": "model cost of the agent, US dollars",
}


#: Exposition names: units spelled out and last, as Prometheus naming (and `promtool check
#: metrics`) asks; the plugin's short names stay the vocabulary everywhere else.
_NAMES = {"mttd_s": "mttd_seconds", "mttl_s": "mttl_seconds", "mttr_s": "mttr_seconds",
          "degradation_pct": "degradation_percent"}


def exposition_name(metric: str, mean: bool = False) -> str:
    """`marathon_<metric>` per run, `marathon_mean_<metric>` per agent x app."""
    return "marathon_" + ("mean_" if mean else "") + _NAMES.get(metric, metric)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: Mapping[str, str]) -> str:
    return "{" + ",".join(f'{key}="{_escape(str(value))}"' for key, value in labels.items()) + "}"


def _number(value: float) -> str:
    return repr(float(value))


def openmetrics_text(results: Iterable[MarathonResult]) -> str:
    """The exposition: one gauge family per metric (`marathon_<metric>` per run and
    `marathon_mean_<metric>` per agent x app), invocation counts, and the closing `# EOF`."""
    runs = sorted(results, key=lambda r: (r.agent, r.app, r.scenario, r.seed))
    rows = leaderboard(runs)
    lines: list[str] = []

    def family(name: str, help_text: str, samples: list[tuple[dict[str, str], float]]) -> None:
        samples = [(labels, value) for labels, value in samples if math.isfinite(value)]
        if not samples:
            return
        lines.append(f"# TYPE {name} gauge")
        lines.append(f"# HELP {name} {_escape(help_text)}")
        lines.extend(f"{name}{_labels(labels)} {_number(value)}" for labels, value in samples)

    def run_labels(result: MarathonResult) -> dict[str, str]:
        return {"agent": result.agent, "app": result.app, "scenario": result.scenario,
                "seed": str(result.seed)}

    for metric in METRICS:
        help_text = _HELP.get(metric, metric)
        family(exposition_name(metric), f"{help_text}, per run", [
            (run_labels(r), r.metrics[metric]) for r in runs if r.metrics.get(metric) is not None
        ])
        family(exposition_name(metric, mean=True), f"{help_text}, mean over agent and app", [
            ({"agent": row.agent, "app": row.app}, row.means[metric])
            for row in rows if row.means.get(metric) is not None
        ])
    family("marathon_invocations_ok", "agent invocations that ended ok, per run",
           [(run_labels(r), float(r.invocations_ok)) for r in runs])
    family("marathon_invocations_failed", "agent invocations that did not end ok, per run",
           [(run_labels(r), float(r.invocations_failed)) for r in runs])
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def write_openmetrics(path: Path, results: Iterable[MarathonResult]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(openmetrics_text(results), encoding="utf-8")
