"""What isolation costs: the Runbook marathon in process vs. in its child process, and the
per-invocation cost of running a `cmd:` program in the sandbox.

1. The Runbook baseline twice per round, as the built-in `runbook` (in process) and as
   `pytest_marathon.agents.runbook:RunbookAgent` (a `module:Class` spec, so it runs in a child
   process, in the sandbox where bubblewrap works): wall time of the whole recorded marathon
   (resolving the spec included) and the agent's share (the sum of the invocations' `wall_s`).
   Rounds alternate the order; the ratio of medians is printed (target <= 1.3x). Both runs must
   score the same: the child changes where the agent runs, not what it decides.
2. `run_process_invocation` of a trivial program plain, in the sandbox, and in the sandbox with
   one relayed loopback endpoint (the MCP server of a run): median milliseconds per invocation.

Run: python benchmarks/isolation_overhead.py [--scenario marathon] [--rounds 3] [--calls 20]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pytest_marathon.config import RunConfig
from pytest_marathon.interface.invocation import run_process_invocation
from pytest_marathon.isolation.probe import sandbox_support
from pytest_marathon.isolation.relay import RelayPool
from pytest_marathon.isolation.sandbox import Sandbox
from pytest_marathon.runner import record_marathon
from pytest_marathon.scoring import score_bundle

IN_PROCESS = "runbook"
IN_CHILD = "pytest_marathon.agents.runbook:RunbookAgent"


def one_marathon(spec: str, scenario: str, seed: int, out: Path) -> tuple[float, float, Path]:
    config = RunConfig(app="boutique", agent=spec, seed=seed, scenario=scenario, out_dir=out)
    started = time.perf_counter()
    bundle = record_marathon(config)
    wall = time.perf_counter() - started
    lines = (bundle / "invocations.jsonl").read_text().splitlines()
    agent = sum(float(json.loads(line)["wall_s"]) for line in lines)
    return wall, agent, bundle


def marathons(scenario: str, seed: int, rounds: int, out: Path) -> None:
    samples: dict[str, list[tuple[float, float]]] = {IN_PROCESS: [], IN_CHILD: []}
    bundles: dict[str, Path] = {}
    for round_ in range(rounds):
        order = (IN_PROCESS, IN_CHILD) if round_ % 2 == 0 else (IN_CHILD, IN_PROCESS)
        for spec in order:
            wall, agent, bundle = one_marathon(spec, scenario, seed, out / spec.replace(":", "_"))
            samples[spec].append((wall, agent))
            bundles[spec] = bundle
            print(f"  round {round_ + 1}: {spec:<45} {wall:7.2f} s (agent {agent:6.2f} s)",
                  flush=True)
    walls = {spec: statistics.median(w for w, _ in runs) for spec, runs in samples.items()}
    agents = {spec: statistics.median(a for _, a in runs) for spec, runs in samples.items()}
    scores = {spec: score_bundle(path)["marathon_score"] for spec, path in bundles.items()}
    print(f"runbook marathon, scenario {scenario}, seed {seed}, {rounds} rounds (medians):")
    print(f"  in process:       {walls[IN_PROCESS]:7.2f} s   agent {agents[IN_PROCESS]:6.2f} s   "
          f"score {scores[IN_PROCESS]}")
    print(f"  in child process: {walls[IN_CHILD]:7.2f} s   agent {agents[IN_CHILD]:6.2f} s   "
          f"score {scores[IN_CHILD]}")
    print(f"  ratio child / in process: {walls[IN_CHILD] / walls[IN_PROCESS]:.3f}x "
          f"(target <= 1.3x); agent time {agents[IN_CHILD] - agents[IN_PROCESS]:+.2f} s")
    if scores[IN_PROCESS] != scores[IN_CHILD]:
        print("  SCORES DIFFER: the child changed the agent's decisions", file=sys.stderr)


def per_invocation(calls: int) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="marathon-bench-"))
    program = [sys.executable, "-S", "-c", "pass"]
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    pool = RelayPool()
    variants = {"plain process": None}
    if sandbox_support().available:
        variants["sandbox"] = Sandbox(workspace)
        relays = pool.relay([f"http://127.0.0.1:{port}/mcp"])
        variants["sandbox + 1 relayed endpoint"] = Sandbox(workspace, relays=relays)
    else:
        print(f"  (no sandbox here: {sandbox_support().reason})")
    print(f"`cmd:` program ({' '.join(program[1:])}), {calls} invocations each (median):")
    base = None
    for label, sandbox in variants.items():
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            outcome = run_process_invocation(
                program, cwd=workspace, env=dict(os.environ), budget_s=30, sandbox=sandbox
            )
            times.append((time.perf_counter() - started) * 1000)
            assert outcome.status == "ok", outcome
        median = statistics.median(times)
        base = median if base is None else base
        extra = "" if median == base else f"  (+{median - base:.1f} ms)"
        print(f"  {label:<30} {median:7.1f} ms{extra}")
    pool.close()
    listener.close()
    os.rmdir(workspace)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="marathon")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    print(f"isolation available: {sandbox_support().available and 'sandbox' or 'process'}")
    with tempfile.TemporaryDirectory(prefix="marathon-bench-out-") as out:
        marathons(args.scenario, args.seed, args.rounds, Path(out))
    per_invocation(args.calls)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
