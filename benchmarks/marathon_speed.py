"""Wall time of a full 90-minute marathon (boutique by default) with the runbook agent (target: < 60 s).

Prints the wall and CPU seconds of the loop alone (no noop baseline, no scoring) and of scoring, and
the virtual/wall and virtual/CPU ratios (CPU time is the fair measure on a machine shared with other
work). Usage: python benchmarks/marathon_speed.py [--seed N] [--agent runbook]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from pytest_marathon.config import RunConfig
from pytest_marathon.faults import load_scenario
from pytest_marathon.runner import record_marathon
from pytest_marathon.scoring import score_bundle

TARGET_S = 60.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", default="boutique")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--agent", default="runbook")
    parser.add_argument("--scenario", default="marathon")
    args = parser.parse_args()
    scenario = load_scenario(args.scenario)
    virtual_s = scenario.warmup_s + scenario.duration_s
    with tempfile.TemporaryDirectory() as out:
        config = RunConfig(app=args.app, agent=args.agent, seed=args.seed,
                           scenario=args.scenario, out_dir=Path(out))
        started, cpu_started = time.perf_counter(), time.process_time()
        bundle = record_marathon(config)
        run_s = time.perf_counter() - started
        run_cpu_s = time.process_time() - cpu_started
        started = time.perf_counter()
        score = score_bundle(bundle)
        score_s = time.perf_counter() - started
    print(f"marathon {args.scenario} {args.app} {args.agent} seed {args.seed}: "
          f"{score['faults']} faults, score {score['marathon_score']}")
    print(f"run wall seconds:     {run_s:.2f}  (target < {TARGET_S:.0f})")
    print(f"run CPU seconds:      {run_cpu_s:.2f}  (the measure on a shared machine)")
    print(f"score wall seconds:   {score_s:.2f}")
    print(f"virtual/wall ratio:   {virtual_s / run_s:.1f}x  ({virtual_s:.0f} virtual s)")
    print(f"virtual/CPU ratio:    {virtual_s / run_cpu_s:.1f}x")
    print(f"target ratio:         {run_s / TARGET_S:.2f} of the budget used")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
