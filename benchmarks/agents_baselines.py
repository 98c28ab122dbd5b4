"""Baseline agents on marathons of one app: the issues' acceptance numbers, printed as a table.

    python benchmarks/agents_baselines.py [--app boutique] [--seeds 1-3] [--scenario marathon]
                                          [--out DIR] [--attackers]

For each seed runs noop, oracle, runbook and keep-style, and prints Marathon-Score, the three
stage rates, Risk, degradation level and wall time, then a mean over seeds per agent, then the
oracle's unhandled faults with their reasons. Targets: oracle >= 85; noop 0 at 100 %; runbook
and keep-style plausible, different, Risk < 0.5 (paper: Runbook 33.5, Keep-agent 41.3).

`--attackers` also runs every attacker of tests/adversaries (agents that earn credit without
diagnosis, one per exploit class): none may out-score the runbook.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_marathon.agents.oracle_report import explain

from pytest_marathon.config import RunConfig
from pytest_marathon.runner import run_marathon

AGENTS = ("noop", "oracle", "runbook", "keep-style")
COLUMNS = ("score", "corr", "loc", "rep", "risk", "degr")
HEADER = f"{'agent':<24} {'seed':>4} {'score':>6} {'corr':>5} {'loc':>5} {'rep':>5} {'risk':>5} {'degr%':>6} {'wall_s':>6}"


def seeds(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def attacker_factories(scenario: str) -> dict[str, Callable[[], Any]]:
    """The attackers of tests/adversaries, imported only when asked for: they are test code, and
    the benchmark is run from the repository root, not from an installed package."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.adversaries import attackers

    return attackers(scenario)


def metrics_row(report: dict[str, Any]) -> dict[str, float]:
    level = report["degradation"]["level_percent"]
    return {
        "score": report["marathon_score"],
        "corr": report["correlated"],
        "loc": report["located"],
        "rep": report["repaired"],
        "risk": report["risk"]["value"],
        "degr": float("nan") if level is None else level,
    }


def line(agent: str, seed: str, v: dict[str, float], wall: float) -> str:
    return (
        f"{agent:<24} {seed:>4} {v['score']:>6.1f} {v['corr']:>5.2f} {v['loc']:>5.2f} "
        f"{v['rep']:>5.2f} {v['risk']:>5.2f} {v['degr']:>6.1f} {wall:>6.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", default="boutique")
    parser.add_argument("--seeds", default="1-3")
    parser.add_argument("--scenario", default="marathon")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--attackers", action="store_true", help="also run every attacker of tests/adversaries")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="marathon-baselines-"))
    runs: dict[str, Callable[[], Any] | None] = dict.fromkeys(AGENTS)
    if args.attackers:
        runs.update(attacker_factories(args.scenario))
    print(HEADER)
    unexplained = []
    rows: dict[str, list[tuple[dict[str, float], float]]] = {name: [] for name in runs}
    for seed in seeds(args.seeds):
        for agent, factory in runs.items():
            spec = agent if factory is None else f"adversary:{agent}"
            config = RunConfig(app=args.app, agent=spec, seed=seed, scenario=args.scenario, out_dir=out)
            started = time.perf_counter()
            result = run_marathon(
                config, agent=None if factory is None else factory(), baseline_cache=out / "noop-cache"
            )
            wall = time.perf_counter() - started
            r = result.score_report
            rows[agent].append((metrics_row(r), wall))
            print(line(agent, str(seed), metrics_row(r), wall), flush=True)
            if agent == "oracle":
                unexplained.extend((seed, row) for row in explain(result.bundle, r))
    print("\nmean over seeds")
    print(HEADER)
    for agent, measured in rows.items():
        mean = {c: statistics.fmean(values[c] for values, _ in measured) for c in COLUMNS}
        print(line(agent, "mean", mean, statistics.fmean(wall for _, wall in measured)))
    print("\noracle: faults not handled end to end (reason codes: agents/oracle_report.py REASONS)")
    for seed, row in unexplained:
        print(f"  seed {seed} {row['fault_id']} {row['catalog_id']:<45} {row['kind']:<15} {row['reason']:<28} {row['detail']}")
    tally = Counter((row["kind"], row["reason"]) for _, row in unexplained)
    print("\noracle: reasons over all seeds")
    for (kind, reason), count in sorted(tally.items()):
        print(f"  {count:>4}  {kind:<15} {reason}")


if __name__ == "__main__":
    main()
