"""Baseline agents on boutique marathons: the issue's acceptance numbers, printed as a table.

    python benchmarks/agents_baselines.py [--seeds 1-3] [--scenario marathon] [--out DIR]

For each seed runs noop, oracle, runbook and keep-style, and prints Marathon-Score, the three
stage rates, Risk, degradation level and wall time, then the oracle's unhandled faults with their
reasons. Targets: oracle >= 85; noop 0 at 100 %; runbook and keep-style plausible, different,
Risk < 0.5 (paper: Runbook 33.5, Keep-agent 41.3).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

from pytest_marathon.agents.oracle_report import explain

from pytest_marathon.config import RunConfig
from pytest_marathon.runner import run_marathon

AGENTS = ("noop", "oracle", "runbook", "keep-style")


def seeds(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-3")
    parser.add_argument("--scenario", default="marathon")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="marathon-baselines-"))
    print(f"{'agent':<11} {'seed':>4} {'score':>6} {'corr':>5} {'loc':>5} {'rep':>5} {'risk':>5} {'degr%':>6} {'wall_s':>6}")
    unexplained = []
    for seed in seeds(args.seeds):
        for agent in AGENTS:
            config = RunConfig(app="boutique", agent=agent, seed=seed, scenario=args.scenario, out_dir=out)
            started = time.perf_counter()
            result = run_marathon(config, baseline_cache=out / "noop-cache")
            wall = time.perf_counter() - started
            r = result.score_report
            level = r["degradation"]["level_percent"]
            print(
                f"{agent:<11} {seed:>4} {r['marathon_score']:>6.1f} {r['correlated']:>5.2f} {r['located']:>5.2f} "
                f"{r['repaired']:>5.2f} {r['risk']['value']:>5.2f} {level if level is not None else float('nan'):>6.1f} {wall:>6.1f}"
            )
            if agent == "oracle":
                unexplained.extend((seed, row) for row in explain(result.bundle, r))
    print("\noracle: faults not handled end to end (reason codes: agents/oracle_report.py REASONS)")
    for seed, row in unexplained:
        print(f"  seed {seed} {row['fault_id']} {row['catalog_id']:<45} {row['kind']:<15} {row['reason']:<28} {row['detail']}")
    tally = Counter((row["kind"], row["reason"]) for _, row in unexplained)
    print("\noracle: reasons over all seeds")
    for (kind, reason), count in sorted(tally.items()):
        print(f"  {count:>4}  {kind:<15} {reason}")


if __name__ == "__main__":
    main()
