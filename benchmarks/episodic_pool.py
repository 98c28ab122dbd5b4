"""Wall time of the whole episodic pool with the oracle (target: < 300 s on 2 cores; AIOpsLab
needs minutes per problem on a cluster).

Usage: python benchmarks/episodic_pool.py [--app APP ...] [--catalog]   (default: every app AIOpsLab has problems on)
"""

from __future__ import annotations

import argparse
import time

from pytest_marathon.episodic import problem_pool, run_problem
from pytest_marathon.episodic.problems import aiopslab_problems

TARGET_S = 300.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", action="append", default=None)
    parser.add_argument("--catalog", action="store_true", help="every catalog fault as a problem too")
    args = parser.parse_args()
    apps = tuple(args.app or sorted({p.app for p in aiopslab_problems()}))
    pool = [p for p in problem_pool(apps, catalog=args.catalog) if not p.unsupported]
    started = time.perf_counter()
    solved = sum(1 for p in pool if run_problem(p, "oracle").correct)
    wall = time.perf_counter() - started
    print(f"apps: {', '.join(apps)}  problems: {len(pool)}  solved by the oracle: {solved}")
    print(f"wall seconds: {wall:.1f}  per problem: {wall / max(1, len(pool)):.2f}")
    print(f"target ratio: {wall / TARGET_S:.2f} of the {TARGET_S:.0f} s budget used")
    return 0 if solved == len(pool) else 1


if __name__ == "__main__":
    raise SystemExit(main())
