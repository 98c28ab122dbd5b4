"""Check that a speed change left the marathons' evidence alone: bundles recorded by this checkout
and by a reference checkout must hold the same streams, wall-time fields aside.

Each marathon is recorded in a child process of the given interpreter (a reference checkout's
own venv, so its code, agents and scenarios are all its own), then every stream is compared line
by line after dropping the keys `wall_s` and `wall_ms` at any depth: wall time is the one thing a
faster twin is meant to change.

Usage: python benchmarks/same_streams.py --reference-python /path/to/main/.venv/bin/python
       [--seeds 1 2] [--runs boutique:runbook boutique:noop ...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

WALL_KEYS = frozenset({"wall_s", "wall_ms"})
DEFAULT_RUNS = ("boutique:runbook", "boutique:noop", "astronomy:runbook", "astronomy:noop")

_RECORD = """
import sys
from pathlib import Path
from pytest_marathon.config import RunConfig
from pytest_marathon.runner import record_marathon
app, agent, seed, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
print(record_marathon(RunConfig(app=app, agent=agent, seed=seed, scenario="marathon", out_dir=out)))
"""


def record(python: str, app: str, agent: str, seed: int, out: Path, path: str | None = None) -> Path:
    """Record one marathon with `python` (and `path` first on its import path, if given);
    bytecode goes to a private cache so that a read-only reference checkout is never written to."""
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(out / "pycache"))
    env.pop("PYTHONPATH", None)
    if path:
        env["PYTHONPATH"] = path
    done = subprocess.run(
        [python, "-c", _RECORD, app, agent, str(seed), str(out)],
        env=env, cwd=out, check=True, capture_output=True, text=True,
    )
    return Path(done.stdout.strip().splitlines()[-1])


def without_wall(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_wall(v) for k, v in value.items() if k not in WALL_KEYS}
    if isinstance(value, list):
        return [without_wall(v) for v in value]
    return value


def stream_differences(ours: Path, theirs: Path) -> list[str]:
    names = sorted({p.name for p in ours.glob("*.jsonl")} | {p.name for p in theirs.glob("*.jsonl")})
    found: list[str] = []
    for name in names:
        a, b = ours / name, theirs / name
        if not a.exists() or not b.exists():
            found.append(f"{name}: only in {'theirs' if not a.exists() else 'ours'}")
            continue
        la, lb = a.read_text().splitlines(), b.read_text().splitlines()
        if len(la) != len(lb):
            found.append(f"{name}: {len(la)} lines here, {len(lb)} in the reference")
        for i, (x, y) in enumerate(zip(la, lb, strict=False)):
            if without_wall(json.loads(x)) != without_wall(json.loads(y)):
                found.append(f"{name}: line {i + 1} differs:\n  here: {x[:400]}\n  ref:  {y[:400]}")
                break
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-python", required=True)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--path", default=None,
                        help="put this folder first on our side's import path (a snapshot of the code)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--runs", nargs="+", default=list(DEFAULT_RUNS))
    parser.add_argument("--keep", type=Path, default=None, help="record into this folder")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="same-streams-"))
    failed = 0
    for run in args.runs:
        app, agent = run.split(":")
        for seed in args.seeds:
            tag = f"{app}-{agent}-{seed}"
            ref_dir = root / "reference" / tag
            ref = next(iter(sorted(ref_dir.glob("*/manifest.json"))), None)
            theirs = ref.parent if ref else record(args.reference_python, app, agent, seed, ref_dir)
            ours_dir = root / "here" / tag
            if ours_dir.exists():
                subprocess.run(["rm", "-rf", str(ours_dir)], check=True)
            ours = record(args.python, app, agent, seed, ours_dir, args.path)
            diffs = stream_differences(ours, theirs)
            failed += bool(diffs)
            print(f"{tag}: {'identical streams' if not diffs else 'DIFFERENT'}", flush=True)
            for d in diffs:
                print("  " + d, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
