"""Wall-time overhead of alert evaluation on a 90-minute boutique twin run.

Runs the twin from warm-up to 90 minutes twice with the same seed: once advancing only, once
also evaluating the whole rule pack every 15 s. Prints both wall times and their ratio (the
target is at most 1.30).
"""

from __future__ import annotations

import argparse
import time

from pytest_marathon.alerting.engine import AlertEngine
from pytest_marathon.alerting.rules import load_rule_pack
from pytest_marathon.backends import create_backend

INTERVAL = 15.0


def run(seed: int, minutes: float, with_alerts: bool) -> tuple[float, float, int]:
    backend = create_backend("boutique", seed)
    engine = AlertEngine(load_rule_pack("boutique"), backend.store, backend.namespace, INTERVAL)
    t = -300.0
    end = minutes * 60.0
    alert_seconds = 0.0
    fired = 0
    started = time.perf_counter()
    while t <= end:
        backend.advance_to(t)
        if with_alerts:
            tick = time.perf_counter()
            fired += sum(1 for e in engine.evaluate(t) if e["event"] == "firing")
            alert_seconds += time.perf_counter() - tick
        t += INTERVAL
    return time.perf_counter() - started, alert_seconds, fired


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--minutes", type=float, default=90.0)
    args = parser.parse_args()
    base, _, _ = run(args.seed, args.minutes, with_alerts=False)
    total, alerts, fired = run(args.seed, args.minutes, with_alerts=True)
    print(f"twin only:          {base:8.2f} s")
    print(f"twin + alert rules: {total:8.2f} s  (alert evaluation {alerts:.2f} s, {fired} firings)")
    print(f"ratio:              {total / base:8.3f}  (target <= 1.30)")


if __name__ == "__main__":
    main()
