"""Activity and stage success over time, in 10-minute bins (paper Figures 4 and 5)."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from .evidence import Evidence

BIN_S = 600.0
_KINDS = {"read": "reads", "act": "actions", "report": "reports"}


def time_bins(
    evidence: Evidence, stage_times: dict[str, dict[str, float | None]]
) -> list[dict[str, Any]]:
    """Per bin [start, end): invocations started in it, mean reads/actions/reports per
    invocation (every tool call counts, whatever its verdict), and among the faults injected
    before `end` the fraction correlated, located and repaired by `end`.

    `stage_times[fault_id]` maps `detected`/`located`/`repaired` to the virtual time the fault
    reached the stage (None when it never did)."""
    started: dict[int, float] = {}
    for record in evidence.invocations:
        started[int(record.get("n") or 0)] = float(record.get("t") or 0.0)
    counts: dict[int, dict[str, int]] = defaultdict(lambda: dict.fromkeys(_KINDS.values(), 0))
    for call in evidence.tool_calls:
        invocation = int(call.get("invocation") or 0)
        t = float(call.get("t") or 0.0)
        started[invocation] = min(started.get(invocation, t), t)
        kind = _KINDS.get(str(call.get("kind")))
        if kind is not None:
            counts[invocation][kind] += 1
    first = min([0.0, *started.values(), *(f.inject_at for f in evidence.faults)])
    last = max([evidence.run_end, *started.values()])
    low = math.floor(first / BIN_S)
    high = max(low + 1, math.ceil(last / BIN_S))
    per_bin: dict[int, list[int]] = defaultdict(list)
    for invocation, t in started.items():
        per_bin[min(math.floor(t / BIN_S), high - 1)].append(invocation)
    bins = []
    for k in range(low, high):
        start, end = k * BIN_S, (k + 1) * BIN_S
        invocations = sorted(per_bin.get(k, []))
        row: dict[str, Any] = {"start": start, "end": end, "invocations": len(invocations)}
        for kind in _KINDS.values():
            total = sum(counts[n][kind] for n in invocations)
            row[f"{kind}_per_invocation"] = total / len(invocations) if invocations else None
        injected = [f for f in evidence.faults if f.inject_at < end]
        row["faults_injected"] = len(injected)
        for stage, label in (
            ("detected", "correlated"),
            ("located", "located"),
            ("repaired", "repaired"),
        ):
            reached = sum(
                1
                for f in injected
                if (when := stage_times[f.fault_id][stage]) is not None and when <= end
            )
            row[label] = reached / len(injected) if injected else None
        bins.append(row)
    return bins
