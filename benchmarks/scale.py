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

The machine is a shared VM whose neighbours move CPU seconds by a third from one minute to the
next, so every app is measured `--repeat` times in interleaved rounds (boutique, trainticket,
boutique, ...): the table gives each app's median, and the ratio is the median of the ratios
taken within a round, when both apps saw the same neighbours. `x real` is the noop marathon's
virtual seconds per wall second (issue 18: at least 400 on Train Ticket).

A speed change is judged with `--against <checkout>`: the same rounds run for that checkout's code
in a second process at the same time (one per core), so both see the same neighbours, and the
table gives both medians and the change. Two runs made one after the other cannot tell a 5 %
gain from this VM's noise; two made side by side can.

Usage: python benchmarks/scale.py [--apps boutique astronomy] [--seed N] [--scenario marathon] [--twin-only]
                                  [--repeat 3] [--against /path/to/reference/checkout] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest_marathon
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
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds (median)")
    parser.add_argument("--twin-only", action="store_true",
                        help="time the twin alone (the default when an app has no fault catalog)")
    parser.add_argument("--against", type=Path, default=None, metavar="CHECKOUT",
                        help="also time a reference checkout's code, side by side")
    parser.add_argument("--json", type=Path, default=None, help="write the medians here")
    args = parser.parse_args()
    if args.against is not None:
        return side_by_side(args)
    apps = args.apps or twin_apps()
    scenario = load_scenario(args.scenario)
    minutes = (scenario.warmup_s + scenario.duration_s) / 60.0
    twin_only = args.twin_only or any(app not in marathon_apps() for app in apps)
    rounds: list[dict[str, tuple[float, float, float]]] = []
    with tempfile.TemporaryDirectory() as out:
        for index in range(args.repeat):
            measured = {}
            for app in apps:
                load_before = os.getloadavg()[0]
                if twin_only:
                    wall, cpu, virtual = measure_twin(app, args.seed, scenario.duration_s)
                    minutes = virtual / 60.0
                else:
                    wall, cpu = measure(app, args.seed, args.scenario, Path(out) / f"{app}-{index}")
                measured[app] = (wall / minutes, cpu / minutes, load_before)
            rounds.append(measured)
    reference = REFERENCE_APP if REFERENCE_APP in apps else apps[0]
    what = "the twin alone over" if twin_only else "noop marathon"
    print(f"{what} '{args.scenario}' ({minutes:.0f} virtual minutes), seed {args.seed}, "
          f"median of {args.repeat} interleaved rounds")
    print(f"{'app':<12}{'deployments':>12}{'wall s/min':>12}{'cpu s/min':>11}{'x real':>8}"
          f"{'x ' + reference + ' (wall)':>20}{'(cpu)':>8}{'load':>7}")
    for app in apps:
        wall_min = statistics.median(r[app][0] for r in rounds)
        cpu_min = statistics.median(r[app][1] for r in rounds)
        load = statistics.median(r[app][2] for r in rounds)
        wall_ratio = statistics.median(r[app][0] / r[reference][0] for r in rounds)
        cpu_ratio = statistics.median(r[app][1] / r[reference][1] for r in rounds)
        print(f"{app:<12}{len(load_app(app).deployments):>12}{wall_min:>12.4f}{cpu_min:>11.4f}"
              f"{60.0 / wall_min:>8.0f}{wall_ratio:>20.2f}{cpu_ratio:>8.2f}{load:>7.1f}")
    if args.repeat > 1:
        print("cpu ratio per round: " + ", ".join(
            " ".join(f"{app} {r[app][1] / r[reference][1]:.2f}" for app in apps if app != reference) for r in rounds))
    print(f"goal: a bigger app's minute <= {GOAL_RATIO:g}x a {reference} minute (issue 18)")
    if args.json is not None:
        args.json.write_text(json.dumps({
            "code": str(Path(pytest_marathon.__file__).resolve().parent.parent),
            "reference": reference,
            "cpu_per_minute": {app: statistics.median(r[app][1] for r in rounds) for app in apps},
            "cpu_ratio": {app: statistics.median(r[app][1] / r[reference][1] for r in rounds) for app in apps},
        }))
    return 0


def side_by_side(args: argparse.Namespace) -> int:
    """Run these rounds for this checkout and for `args.against` at once, each in a process of
    its own whose `pytest_marathon` is that checkout's, and print both medians."""
    reference = args.against.resolve()
    if not (reference / "pytest_marathon" / "__init__.py").is_file():
        raise SystemExit(f"--against {args.against}: not a checkout (no pytest_marathon/__init__.py)")
    options = [f"--seed={args.seed}", f"--scenario={args.scenario}", f"--repeat={args.repeat}"]
    options += ["--apps", *args.apps] if args.apps else []
    options += ["--twin-only"] if args.twin_only else []
    here = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as scratch:
        children = {}
        for name, checkout in (("this", here), ("reference", reference)):
            out = Path(scratch) / f"{name}.json"
            # bytecode in a private cache: a reference checkout is never written to
            env = dict(os.environ, PYTHONPATH=str(checkout), PYTHONPYCACHEPREFIX=str(Path(scratch) / name))
            children[name] = (out, subprocess.Popen(
                [sys.executable, __file__, *options, "--json", str(out)], env=env, text=True,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        results = {}
        for name, (out, child) in children.items():
            log, _ = child.communicate()
            if child.returncode != 0:
                raise SystemExit(f"{name} checkout's run failed:\n{log}")
            results[name] = json.loads(out.read_text())
    for name, checkout in (("this", here), ("reference", reference)):
        if Path(results[name]["code"]) != checkout:
            raise SystemExit(f"the {name} run imported {results[name]['code']}, not {checkout}")
    ours, theirs = results["this"], results["reference"]
    print(f"side by side: this checkout ({here}) and {reference}, "
          f"median of {args.repeat} rounds each, both at once")
    print(f"{'app':<12}{'cpu s/min':>11}{'reference':>11}{'change':>9}"
          f"{'x ' + ours['reference']:>16}{'reference':>11}")
    for app, cpu in ours["cpu_per_minute"].items():
        before = theirs["cpu_per_minute"][app]
        print(f"{app:<12}{cpu:>11.4f}{before:>11.4f}{100.0 * (cpu / before - 1.0):>8.1f}%"
              f"{ours['cpu_ratio'][app]:>16.2f}{theirs['cpu_ratio'][app]:>11.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
