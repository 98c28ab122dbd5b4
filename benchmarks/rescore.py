"""Re-scoring budget: a 60-fault, 90-minute marathon bundle must re-score in under 1 s.

Builds a synthetic bundle with realistic stream sizes through the Recorder (SLI every 5 s from
the warm-up on, thousands of alert events and tool calls, an agent that files alerts by
workload and acts on some), then times `score_bundle` from the path (verification included)
and checks the re-score equals the first score. Prints the time and its ratio to the budget.

    python benchmarks/rescore.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from pytest_marathon.bundle import Recorder
from pytest_marathon.determinism import rng_for
from pytest_marathon.scoring import score_bundle

BUDGET_S = 1.0
SEED = 11
WORKLOADS = [
    "frontend",
    "cartservice",
    "checkoutservice",
    "productcatalogservice",
    "currencyservice",
    "paymentservice",
    "shippingservice",
    "emailservice",
    "recommendationservice",
    "adservice",
    "redis-cart",
]
MANIFEST = {
    "release": "pytest-marathon bench",
    "app": "boutique",
    "scenario": "marathon",
    "seed": SEED,
    "agent": "synthetic",
    "agent_flags": {},
    "config": {"delta": 120},
    "backend": "twin",
}


def build(directory: Path) -> dict[str, int]:
    rng = rng_for(SEED, "bench", "rescore")
    counts: dict[str, int] = {}
    with Recorder(directory, MANIFEST) as recorder:

        def put(stream: str, record: dict) -> None:
            recorder.append(stream, record)
            counts[stream] = counts.get(stream, 0) + 1

        faults = []
        for index in range(60):
            target = rng.choice(WORKLOADS[1:])
            scope = sorted({target, "frontend", *rng.sample(WORKLOADS, 2)})
            inject = round(3600 * (index / 60) ** 0.5, 1)
            revert = inject + rng.randint(4, 12) * 60
            faults.append((f"f{index + 1:02d}", target, scope, inject, revert))
            put(
                "schedule",
                {
                    "fault_id": f"f{index + 1:02d}",
                    "catalog_id": f"boutique-{index}",
                    "category": "code",
                    "mechanism": "change",
                    "target": target,
                    "culprits": [target],
                    "artifact": f"image:{target}",
                    "aliases": [],
                    "scope": scope,
                    "probe": {},
                    "inject_at": inject,
                    "revert_at": revert,
                    "remedy": "rollback",
                },
            )
        alert_ids_by_workload: dict[str, list[str]] = {w: [] for w in WORKLOADS}
        for k in range(2400):
            fault = rng.choice(faults)
            workload = rng.choice(fault[2])
            fired = round(rng.uniform(fault[3], fault[4] + 60), 1)
            alert_id = f"a{k}"
            alert_ids_by_workload[workload].append(alert_id)
            labels = {"namespace": "boutique", "service": workload, "severity": "warning"}
            for event, t in (("firing", fired), ("resolved", fired + 300)):
                put(
                    "alerts",
                    {
                        "t": t,
                        "event": event,
                        "alert_id": alert_id,
                        "alertname": "HighErrorRate",
                        "labels": labels,
                        "annotations": {"summary": "errors"},
                        "value": 0.2,
                        "active_at": fired - 30,
                        "fired_at": fired,
                    },
                )
        for n in range(1, 46):
            t = 120.0 * n
            seq = 0
            for _ in range(rng.randint(20, 60)):
                seq += 1
                put(
                    "tool_calls",
                    {
                        "t": t,
                        "invocation": n,
                        "seq": seq,
                        "tool": "query_metrics",
                        "kind": "read",
                        "args": {"query": "up"},
                        "verdict": "ok",
                        "error": None,
                        "result_chars": 800,
                        "wall_ms": 12,
                    },
                )
            for workload in rng.sample(WORKLOADS, 6):
                seq += 1
                seen = [a for a in alert_ids_by_workload[workload] if int(a[1:]) % 45 < n]
                put(
                    "reports",
                    {
                        "t": t,
                        "invocation": n,
                        "seq": seq,
                        "incident_id": f"INC-{workload}-{n // 4}",
                        "alert_ids": seen,
                        "status": "open",
                        "root_cause": {
                            "culprits": [workload],
                            "category": "code",
                            "artifact": f"image:{workload}",
                            "text": "x",
                        },
                    },
                )
                put(
                    "tool_calls",
                    {
                        "t": t,
                        "invocation": n,
                        "seq": seq,
                        "tool": "report_incidents",
                        "kind": "report",
                        "args": {},
                        "verdict": "ok",
                        "error": None,
                        "result_chars": 20,
                        "wall_ms": 5,
                    },
                )
            for workload in rng.sample(WORKLOADS, 3):
                seq += 1
                put(
                    "interventions",
                    {
                        "t": t,
                        "invocation": n,
                        "seq": seq,
                        "tool": "rollback_service",
                        "target": workload,
                        "targets": [workload],
                        "incident_id": f"INC-{workload}-{n // 4}",
                        "params": {},
                        "ok": True,
                        "changed": True,
                        "completed_at": t + 45,
                    },
                )
                put(
                    "tool_calls",
                    {
                        "t": t,
                        "invocation": n,
                        "seq": seq,
                        "tool": "rollback_service",
                        "kind": "act",
                        "args": {},
                        "verdict": "ok",
                        "error": None,
                        "result_chars": 20,
                        "wall_ms": 5,
                    },
                )
            put(
                "invocations",
                {
                    "n": n,
                    "t": t,
                    "status": "ok",
                    "wall_s": 9.5,
                    "calls": seq,
                    "model_calls": 10,
                    "input_tokens": 120000,
                    "output_tokens": 3000,
                    "cost_usd": 0.07,
                    "detail": "",
                },
            )
        for fault_id, _, _, inject, revert in faults:
            t = inject
            while t < revert:
                put(
                    "probes",
                    {
                        "t": t,
                        "fault_id": fault_id,
                        "healthy": rng.random() < 0.5,
                        "artifact_corrected": False,
                    },
                )
                t += 15.0
        for k in range(-60, 1081):
            put(
                "sli",
                {
                    "t": 5.0 * k,
                    "q": 10.0,
                    "e": round(rng.random() * 0.1, 6),
                    "l": round(rng.random() * 0.05, 6),
                },
            )
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="re-scores to time (best is kept)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as root:
        directory = Path(root) / "bundle"
        counts = build(directory)
        size = sum(p.stat().st_size for p in directory.iterdir())
        first = score_bundle(directory)
        timings = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            again = score_bundle(directory)
            timings.append(time.perf_counter() - start)
            if json.dumps(again, sort_keys=True) != json.dumps(first, sort_keys=True):
                print("re-score differs from the first score", file=sys.stderr)
                return 1
    best = min(timings)
    print(
        f"bundle: {size / 1e6:.1f} MB, " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    )
    print(
        f"score {first['marathon_score']:.1f}, corr {first['correlated']:.3f}, "
        f"loc {first['located']:.3f}, rep {first['repaired']:.3f}"
    )
    print(
        f"re-score wall time: best {best:.3f} s of {args.repeat}, "
        f"ratio to the {BUDGET_S:.0f} s budget: {best / BUDGET_S:.2f}"
    )
    print("re-score identical to first score: yes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
