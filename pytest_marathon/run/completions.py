"""When an agent's change took effect: completion records for interventions still rolling out.

The interface records an intervention when it is executed, with the completion time the backend
knew then; a restart, rollback, scale or new image is still rolling out at that moment, so its
`completed_at` is null. The scorer credits a repair only from the moment the change took effect,
so the runner watches every such intervention and, at the first tick its rollout is done, appends
a completion record (`event: completed`, the intervention's `invocation` and `seq`,
`completed_at`) to `interventions.jsonl`. A rollout a later revision superseded never completes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_marathon.scoring.evidence import COMPLETED_EVENT


@dataclass(frozen=True)
class _Pending:
    invocation: int
    seq: int
    deployment: str
    revision: int | None


class CompletionTracker:
    """Holds the interventions whose rollout is in progress and reports them once done."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self._pending: list[_Pending] = []

    def watch(self, record: Mapping[str, Any]) -> None:
        """Track an `interventions` record if it executed but has not taken effect yet.

        Called synchronously from the tool session's sink, right after the backend applied the
        change, so the deployment's current revision is the one this intervention started."""
        if record.get("event") == COMPLETED_EVENT or not record.get("ok"):
            return
        if record.get("changed") is False:
            return  # a no-op was never executed: no rollout of its own to wait for
        if record.get("completed_at") is not None or record.get("target") is None:
            return
        deployment = str(record["target"])
        self._pending.append(
            _Pending(
                invocation=int(record.get("invocation") or 0),
                seq=int(record["seq"]),
                deployment=deployment,
                revision=_current_revision(self._backend, deployment),
            )
        )

    def completed(self, t: float) -> list[dict[str, Any]]:
        """Completion records, in recorded order, of the watched interventions done by time t."""
        records = []
        still_pending = []
        for item in self._pending:
            done_at = self._backend.rollout_completed_at(item.deployment, item.revision)
            if done_at is None:
                still_pending.append(item)
                continue
            records.append(
                {
                    "t": t,
                    "event": COMPLETED_EVENT,
                    "invocation": item.invocation,
                    "seq": item.seq,
                    "completed_at": round(float(done_at), 6),
                }
            )
        self._pending = still_pending
        return records


def _current_revision(backend: Any, deployment: str) -> int | None:
    """The deployment's current revision, or None (then its current rollout is what counts)."""
    for entry in backend.rollout_history(deployment):
        if entry.get("current"):
            return int(entry["revision"])
    return None
