"""Wall-time overhead of alert evaluation on a 90-minute boutique twin run.

Runs the twin from warm-up to 90 minutes, evaluating the whole rule pack every 15 s, and times
the twin's ticks and the alert evaluations separately within the same run (so load from other
processes affects both alike). Repeats and keeps the fastest of each. Prints the ratio of wall
time with alert evaluation to wall time without it (the target is at most 1.30).
"""

from __future__ import annotations

import argparse
import time

from pytest_marathon.alerting.engine import AlertEngine
from pytest_marathon.alerting.rules import load_rule_pack
from pytest_marathon.backends import create_backend

INTERVAL = 15.0


def run(seed: int, minutes: float) -> tuple[float, float, int]:
    """(seconds spent in the twin, seconds spent evaluating alerts, firings)."""
    backend = create_backend("boutique", seed)
    engine = AlertEngine(load_rule_pack("boutique"), backend.store, backend.namespace, INTERVAL)
    t = -300.0
    end = minutes * 60.0
    twin_seconds = alert_seconds = 0.0
    fired = 0
    while t <= end:
        tick = time.perf_counter()
        backend.advance_to(t)
        middle = time.perf_counter()
        fired += sum(1 for e in engine.evaluate(t) if e["event"] == "firing")
        done = time.perf_counter()
        twin_seconds += middle - tick
        alert_seconds += done - middle
        t += INTERVAL
    return twin_seconds, alert_seconds, fired


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--minutes", type=float, default=90.0)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    runs = [run(args.seed, args.minutes) for _ in range(args.repeat)]
    twin = min(r[0] for r in runs)
    alerts = min(r[1] for r in runs)
    fired = runs[0][2]
    print(f"twin only:          {twin:8.2f} s")
    print(f"alert evaluation:   {alerts:8.2f} s  ({fired} firings)")
    print(f"ratio:              {(twin + alerts) / twin:8.3f}  (target <= 1.30)")


if __name__ == "__main__":
    main()
