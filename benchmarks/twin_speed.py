"""How fast the twin runs a fault-free marathon (boutique by default) (5-minute warm-up + 90 minutes).

Prints virtual seconds per wall second (goal: >= 500 on a 2-core machine) and the health figures
of the run, so a speed-up that broke the app shows up here too.

    python benchmarks/twin_speed.py [--seed N] [--minutes 90] [--users 10]
"""

from __future__ import annotations

import argparse
import time

from pytest_marathon.backends import create_backend


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", default="boutique")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--minutes", type=float, default=90.0)
    parser.add_argument("--users", type=int, default=10)
    args = parser.parse_args()
    started = time.perf_counter()
    backend = create_backend(args.app, args.seed, users=args.users)
    start_t = backend.now
    backend.advance_to(args.minutes * 60.0)
    wall = time.perf_counter() - started
    virtual = backend.now - start_t
    samples = backend.sli_samples(since=0.0)
    requests = sum(s.q for s in samples) * backend.tick_seconds
    failed = sum(s.q * s.e for s in samples) * backend.tick_seconds
    restarts = sum(p["status"]["containerStatuses"][0]["restartCount"] for p in backend.resources("pods"))
    print(f"virtual seconds: {virtual:.0f}  wall seconds: {wall:.2f}")
    print(f"virtual seconds per wall second: {virtual / wall:.0f}  (goal >= 500)")
    print(f"requests: {requests:.0f}  failed fraction: {failed / max(requests, 1):.4%}  restarts: {restarts}")
    print(f"series: {len(backend.store)}  samples: {backend.store.sample_count()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
