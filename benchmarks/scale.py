"""Wall cost of one virtual minute of a noop marathon, side by side for every app the twin has.

Issue 18's scale goal: the twin's cost grows no faster than services x requests, so a bigger app
(Train Ticket, 41 services) should cost at most 4x a boutique minute. Each app runs the same
scenario with the noop agent (the twin, alerts and recording alone); the table gives wall and
CPU seconds per virtual minute, the app's size (deployments) and the ratio of its minute to
boutique's. CPU seconds are printed because the machine is shared: other load inflates wall
time far more than CPU time.

An app without an admitted fault catalog (hotelreservation, socialnetwork) has no marathon to
record: when one is asked for, every app is timed as the twin alone under its load from the
warm-up to the scenario's end (`--twin-only` asks for that mode outright).

Usage: python benchmarks/scale.py [--apps boutique astronomy] [--seed N] [--scenario marathon] [--twin-only]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from pytest_marathon.config import RunConfig
from pytest_marathon.faults import load_scenario
from pytest_marathon.marathon_apps import marathon_apps
from pytest_marathon.runner import record_marathon
from pytest_marathon.twin.appspec import APPS_DIR, load_app
from pytest_marathon.twin.engine import Twin

REFERENCE_APP = "boutique"
#: Issue 18: a Train Ticket minute at most this many boutique minutes.
GOAL_RATIO = 4.0


def twin_apps() -> list[str]:
    """Every app shipped with the twin (a folder with an app.yaml), reference app first."""
    names = sorted(p.name for p in APPS_DIR.iterdir() if (p / "app.yaml").is_file())
    return sorted(names, key=lambda name: name != REFERENCE_APP)


def measure(app: str, seed: int, scenario: str, out: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of recording one noop marathon of `app`."""
    config = RunConfig(app=app, agent="noop", seed=seed, scenario=scenario, out_dir=out)
    wall, cpu = time.perf_counter(), time.process_time()
    record_marathon(config)
    return time.perf_counter() - wall, time.process_time() - cpu


def measure_twin(app: str, seed: int, seconds: float) -> tuple[float, float, float]:
    """(wall, CPU, virtual) seconds of the twin alone, from its warm-up to `seconds`, under its load
    (an app without a fault catalog has no marathon to record)."""
    wall, cpu = time.perf_counter(), time.process_time()
    twin = Twin(app, seed=seed)
    start = t = twin.now
    while t < seconds:
        t = min(seconds, t + 60.0)
        twin.advance_to(t)
    return time.perf_counter() - wall, time.process_time() - cpu, seconds - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", nargs="+", default=None, help="default: every app of the twin")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scenario", default="marathon")
    parser.add_argument("--twin-only", action="store_true",
                        help="time the twin alone (the default when an app has no fault catalog)")
    args = parser.parse_args()
    apps = args.apps or twin_apps()
    scenario = load_scenario(args.scenario)
    minutes = (scenario.warmup_s + scenario.duration_s) / 60.0
    twin_only = args.twin_only or any(app not in marathon_apps() for app in apps)
    rows = []
    with tempfile.TemporaryDirectory() as out:
        for app in apps:
            load_before = os.getloadavg()[0]
            if twin_only:
                wall, cpu, virtual = measure_twin(app, args.seed, scenario.duration_s)
                minutes = virtual / 60.0
            else:
                wall, cpu = measure(app, args.seed, args.scenario, Path(out) / app)
            rows.append((app, len(load_app(app).deployments), wall / minutes, cpu / minutes,
                         load_before))
    reference = next((r for r in rows if r[0] == REFERENCE_APP), rows[0])
    what = "the twin alone over" if twin_only else "noop marathon"
    print(f"{what} '{args.scenario}' ({minutes:.0f} virtual minutes), seed {args.seed}")
    print(f"{'app':<12}{'deployments':>12}{'wall s/min':>12}{'cpu s/min':>11}"
          f"{'x ' + reference[0] + ' (wall)':>20}{'(cpu)':>8}{'load':>7}")
    for app, deployments, wall_min, cpu_min, load in rows:
        print(f"{app:<12}{deployments:>12}{wall_min:>12.4f}{cpu_min:>11.4f}"
              f"{wall_min / reference[2]:>20.2f}{cpu_min / reference[3]:>8.2f}{load:>7.1f}")
    print(f"goal: a bigger app's minute <= {GOAL_RATIO:g}x a {reference[0]} minute (issue 18)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
