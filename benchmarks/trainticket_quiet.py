"""Alert noise of the Train Ticket rule pack on a fault-free run, and how soon it pages on a break.

Drives the trainticket twin through the quiet scenario (scenarios/quiet.yaml: 300 s warm-up, then
3600 + 1800 s) with the scenario's benign background releases shipped by the orchestrator as in a
marathon, evaluating pack/trainticket.rules.yaml every 15 s from the start of the warm-up as the
runner does, and prints every alert that fired. `--break DEPLOYMENT` scales that deployment to 0
replicas at t=120 s on a run without background releases and prints how many seconds after the
break each alert fired.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from pytest_marathon.alerting.engine import AlertEngine
from pytest_marathon.alerting.rules import load_rule_pack
from pytest_marathon.backends import create_backend
from pytest_marathon.faults.orchestrator import Orchestrator
from pytest_marathon.faults.scenario import load_scenario
from pytest_marathon.faults.schedule import Schedule, schedule_for
from pytest_marathon.vocabulary import workload_of

APP = "trainticket"
INTERVAL = 15.0


def run(seed: int, *, background: bool = True, end: float | None = None,
        broken: str | None = None, break_at: float = 120.0) -> dict[str, Any]:
    """One run: the alert history, the background releases shipped and the CPU seconds spent."""
    scenario = load_scenario("quiet")
    schedule = schedule_for(APP, scenario, seed)
    if not background:
        schedule = Schedule(APP, scenario, seed, (), (), None)
    backend = create_backend(APP, seed)
    orchestrator = Orchestrator(backend, schedule)
    engine = AlertEngine(load_rule_pack(APP), backend.store, backend.namespace, INTERVAL)
    horizon = float(scenario.duration_s) if end is None else end
    releases: list[dict[str, Any]] = []
    started = time.process_time()
    t = -float(scenario.warmup_s)
    while t <= horizon:
        orchestrator.step(t)
        releases.extend(orchestrator.take_releases())
        if broken is not None and t == break_at:
            backend.scale(broken, 0)
        backend.advance_to(t)
        engine.evaluate(t)
        t += INTERVAL
    orchestrator.finish()
    return {"history": engine.history(), "errors": list(engine.errors), "releases": releases,
            "cpu_s": time.process_time() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-background", action="store_true", help="leave out the benign releases")
    parser.add_argument("--minutes", type=float, default=None, help="stop after this many minutes")
    parser.add_argument("--break", dest="broken", default=None, help="scale this deployment to 0 at t=120 s")
    args = parser.parse_args()
    end = None if args.minutes is None else args.minutes * 60.0
    background = not args.no_background and args.broken is None
    result = run(args.seed, background=background, end=end, broken=args.broken)
    shipped = [r for r in result["releases"] if r.get("kind") != "initial"]
    print(f"seed {args.seed}: {len(shipped)} release records, {result['cpu_s']:.1f} s CPU, "
          f"{len(result['errors'])} evaluation errors")
    history = result["history"]
    print(f"{len(history)} alert(s)")
    for alert in history:
        fired = alert["fired_at"]
        after = "" if args.broken is None else f" (+{fired - 120.0:.0f} s)"
        print(f"  {fired:8.0f}{after}  {alert['alertname']}({workload_of(alert['labels']) or '-'}) "
              f"resolved {alert.get('resolved_at')}")


if __name__ == "__main__":
    main()
