"""Fault injection on the runner: SIGINT or SIGTERM at a random moment of a real marathon session.

Each trial starts a real `pytest --marathon-app=boutique --agent=runbook --marathon-scenario=short-5
--marathon-seed=1-2` (alone or with `-n 2`) or the CLI `pytest-marathon run` for the same grid,
sends one signal after a seeded random delay within the session's duration, and checks what a
user is promised (README, "Interrupting a run"):

* every bundle left on disk is complete or scores with `pytest-marathon score --allow-incomplete`
  (never `running`: its counts match its files);
* the summary of the finished runs is printed (pytest's leaderboard; the CLI's per-seed summary),
  and each interrupted run is named with its bundle;
* the exit code is the documented one: pytest's INTERRUPTED (2) for either signal, the CLI's
  130 (SIGINT) or 143 (SIGTERM); a session that ended before the signal arrived exits 0;
* no traceback, internal error or pluggy warning in the output.

`phase` records where the signal landed, seen from the bundle folder at that moment: `prestart`
(pytest has not printed its header, or `python -m pytest_marathon` has not reached its first line:
Python and pytest are still starting, before the plugin is configured; the signal gets their default behaviour, as the README says, so only "no bundle" is
checked), `startup` (no bundle yet), `run` (a bundle is being recorded), `between` (no bundle
running: scoring, or between runs) or `missed` (the session had already ended).

Run as a script for the acceptance numbers (CPU heavy; run it in the background):
`python tests/signal_faults.py --trials 100 --seed 1 --out signal_faults.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

GRID = ["--marathon-app=boutique", "--agent=runbook", "--marathon-scenario=short-5",
        "--marathon-seed=1-2"]
CLI = ["run", "--app", "boutique", "--agent", "runbook", "--scenario", "short-5", "--seed", "1-2",
       "--alerts", "0"]
MODES = ("pytest", "xdist", "cli")
#: Seconds an uninterrupted session of each mode takes on 2 busy cores (measured); the script
#: measures them afresh (`calibrate`) so that its signals land inside the session on this machine.
DURATION_S = {"pytest": 45.0, "xdist": 40.0, "cli": 40.0}
#: Signals land within this share of the measured session, so that load changing between the
#: calibration and a trial rarely makes one land after the end.
LANDING_SHARE = 0.9
BAD_OUTPUT = ("Traceback (most recent call last)", "INTERNALERROR", "PluggyTeardownRaisedWarning",
              "cannot send")


@dataclass
class Trial:
    mode: str
    signal: str
    delay_s: float
    phase: str = ""
    exit_code: int | None = None
    bundles: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    wall_s: float = 0.0


def expected_exit(mode: str, signame: str) -> int:
    if mode == "cli":
        return 130 if signame == "SIGINT" else 143
    return 2


def warm_cache(python: str, folder: Path) -> Path:
    """A noop baseline cache, built once and copied into each trial (as a user's would be)."""
    cache = folder / "warm"
    if not (cache / ".marathon" / "noop").is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run([python, "-m", "pytest", *GRID, "-p", "no:randomly", "-q"], cwd=cache,
                       check=True, capture_output=True, timeout=900)
    return cache / ".marathon" / "noop"


def bundle_folder(mode: str, workdir: Path) -> Path:
    return workdir / ("out" if mode == "cli" else ".marathon/bundles")


def bundle_states(folder: Path) -> dict[str, str]:
    states = {}
    for manifest in sorted(folder.glob("*/manifest.json")):
        try:
            states[manifest.parent.name] = json.loads(manifest.read_text())["status"]
        except (OSError, ValueError, KeyError):
            states[manifest.parent.name] = "unreadable"
    for bundle in folder.glob("*"):
        if bundle.is_dir() and bundle.name not in states:
            states[bundle.name] = "no manifest"
    return states


def phase_of(states: dict[str, str]) -> str:
    if not states:
        return "startup"
    if "running" in states.values() or "no manifest" in states.values():
        return "run"
    return "between"


def command(mode: str, python: str) -> list[str]:
    if mode == "cli":
        return [python, "-m", "pytest_marathon", *CLI, "--out", "out"]
    extra = ["-n", "2"] if mode == "xdist" else []
    return [python, "-m", "pytest", *GRID, "-p", "no:randomly", "-p", "no:cacheprovider", *extra]


def _session_started(mode: str, stdout: Path, pid: int) -> bool:
    """pytest prints its header once the plugins are configured; before that, Python and pytest
    are still starting and the signal gets their default behaviour (README). `python -m
    pytest_marathon` catches SIGTERM from its first line on: before that, Python itself is still
    starting (site packages, `.pth` files), with the same default behaviour."""
    if mode != "cli":
        return "test session starts" in stdout.read_text(errors="replace")
    try:
        return handles(pid, signal.SIGTERM)
    except OSError:
        return True


def handles(pid: int, signum: int) -> bool:
    """Whether process `pid` has a handler for `signum` (Linux `/proc/PID/status`, SigCgt)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(re.search(r"^SigCgt:\s*([0-9a-f]+)", status, flags=re.M).group(1), 16)
    return bool(caught & (1 << (signum - 1)))


def _default_signals() -> None:
    """A session started from a background job inherits an ignored SIGINT; a user's has not."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def run_trial(trial: Trial, python: str, noop_cache: Path, keep: Path | None = None) -> Trial:
    workdir = Path(tempfile.mkdtemp(prefix="signal-fault-"))
    try:
        shutil.copytree(noop_cache, workdir / ".marathon" / "noop")
        bundles = bundle_folder(trial.mode, workdir)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
        env.pop("GITHUB_STEP_SUMMARY", None)
        started = time.monotonic()
        with open(workdir / "stdout", "wb") as out, open(workdir / "stderr", "wb") as err:
            process = subprocess.Popen(command(trial.mode, python), cwd=workdir, stdout=out,
                                       stderr=err, stdin=subprocess.DEVNULL, env=env,
                                       preexec_fn=_default_signals)
            time.sleep(trial.delay_s)
            if process.poll() is None:
                trial.phase = phase_of(bundle_states(bundles))
                if not _session_started(trial.mode, workdir / "stdout", process.pid):
                    trial.phase = "prestart"
                process.send_signal(getattr(signal, trial.signal))
            else:
                trial.phase = "missed"
            try:
                trial.exit_code = process.wait(timeout=180)
            except subprocess.TimeoutExpired:
                process.kill()
                trial.exit_code = process.wait()
                trial.problems.append("did not exit within 180 s of the signal")
        trial.wall_s = round(time.monotonic() - started, 1)
        time.sleep(1.0)  # a worker orphaned by a killed controller writes after it exited
        output = (workdir / "stdout").read_text(errors="replace") + (
            workdir / "stderr").read_text(errors="replace")
        check(trial, output, bundles, python)
        if trial.problems and keep is not None:
            target = keep / f"{trial.mode}-{trial.signal}-{trial.delay_s:.1f}"
            shutil.copytree(workdir, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("noop"))
            trial.problems.append(f"kept in {target}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return trial


def check(trial: Trial, output: str, bundles: Path, python: str) -> None:
    trial.bundles = bundle_states(bundles)
    if trial.phase == "prestart":  # documented: no run, no bundle, the default behaviour
        if trial.bundles:
            trial.problems.append(f"bundles written before the session started: {trial.bundles}")
        return
    for name, status in trial.bundles.items():
        if name.endswith(".prev") or status == "complete":
            continue
        scored = subprocess.run(
            [python, "-m", "pytest_marathon", "score", str(bundles / name), "--allow-incomplete"],
            capture_output=True, text=True, timeout=300,
        )
        if scored.returncode != 0:
            last = (scored.stderr or scored.stdout).strip().splitlines()[-1:]
            trial.problems.append(f"bundle {name} ({status}) does not score: {last}")
    for bad in BAD_OUTPUT:
        if bad in output:
            trial.problems.append(f"output contains {bad!r}")
    ran_to_end = trial.phase == "missed"
    expected = 0 if ran_to_end else expected_exit(trial.mode, trial.signal)
    # A session whose runs all finished and whose final line is printed has written everything;
    # a signal then may land while Python itself shuts down (its handlers already reset) and end
    # the process by that signal: documented, and nothing is lost.
    ended = (trial.mode != "cli" and all_complete(trial.bundles)
             and re.search(r"^=+ .* in [\d.]+s", output, flags=re.M) is not None)
    signalled = -int(getattr(signal, trial.signal))
    if trial.exit_code != expected and not (ended and trial.exit_code in (0, signalled)):
        trial.problems.append(f"exit code {trial.exit_code}, expected {expected}")
    finished = [n for n, s in trial.bundles.items() if s == "complete" and not n.endswith(".prev")]
    interrupted = [n for n, s in trial.bundles.items() if s == "incomplete"]
    if trial.mode == "cli":
        shown = len(re.findall(r"^bundle: ", output, flags=re.M))
        if shown < len(finished) - 1:  # the last one may have been stopped while scoring
            trial.problems.append(f"{len(finished)} finished run(s), {shown} summary(ies) printed")
    else:
        passed = re.search(r"(\d+) passed", output)
        if passed and "marathon leaderboard" not in output:
            trial.problems.append("runs passed but no leaderboard was printed")
        if finished and not passed and len(finished) == 2 and trial.exit_code == 0:
            trial.problems.append("finished runs were not reported")
    for name in interrupted:
        if name not in output:
            trial.problems.append(f"interrupted run {name} is not named in the output")


def all_complete(states: dict[str, str]) -> bool:
    return len(states) >= 2 and all(s == "complete" for s in states.values())


def calibrate(python: str, noop_cache: Path, modes: tuple[str, ...]) -> dict[str, float]:
    """Seconds an uninterrupted session of each mode takes here and now: one untouched run each.

    A fixed estimate made on a busier machine sends half the signals after the session ended
    (`missed`), which tests nothing."""
    durations = {}
    for mode in modes:
        workdir = Path(tempfile.mkdtemp(prefix="signal-calibrate-"))
        try:
            shutil.copytree(noop_cache, workdir / ".marathon" / "noop")
            started = time.monotonic()
            subprocess.run(command(mode, python), cwd=workdir, capture_output=True, timeout=900,
                           stdin=subprocess.DEVNULL)
            durations[mode] = round(time.monotonic() - started, 1)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return durations


def plan(trials: int, seed: int, modes: tuple[str, ...] = MODES,
         durations: dict[str, float] | None = None) -> list[Trial]:
    """The seeded list of trials: modes and signals alternate, delays are uniform in the run."""
    rng = random.Random(seed)
    seconds = DURATION_S if durations is None else durations
    planned = []
    for i in range(trials):
        mode = modes[i % len(modes)]
        signame = ("SIGINT", "SIGTERM")[(i // len(modes)) % 2]
        latest = max(0.5, seconds[mode] * LANDING_SHARE)
        planned.append(Trial(mode, signame, round(rng.uniform(0.3, latest), 2)))
    return planned


def summarise(done: list[Trial]) -> dict[str, object]:
    phases: dict[str, int] = {}
    for trial in done:
        key = f"{trial.mode}/{trial.signal}/{trial.phase}"
        phases[key] = phases.get(key, 0) + 1
    return {
        "trials": len(done),
        "landed": sum(1 for t in done if t.phase != "missed"),
        "failed": sum(1 for t in done if t.problems),
        "phases": dict(sorted(phases.items())),
        "failures": [asdict(t) for t in done if t.problems],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "signal-faults")
    parser.add_argument("--out", type=Path, default=None, help="JSON file for the numbers")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    noop = warm_cache(args.python, args.work)
    modes = tuple(args.modes.split(","))
    durations = calibrate(args.python, noop, modes)
    print(f"uninterrupted sessions (s): {durations}", flush=True)
    done = []
    for trial in plan(args.trials, args.seed, modes, durations):
        done.append(run_trial(trial, args.python, noop, keep=args.work / "failed"))
        status = "FAIL " + "; ".join(trial.problems) if trial.problems else "ok"
        print(f"{len(done):3d} {trial.mode:6s} {trial.signal:7s} {trial.delay_s:5.1f}s "
              f"{trial.phase:8s} exit={trial.exit_code} {status}", flush=True)
        if args.out is not None:
            args.out.write_text(json.dumps(summarise(done), indent=2))
    summary = summarise(done)
    print(json.dumps({k: v for k, v in summary.items() if k != "failures"}, indent=2))
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
