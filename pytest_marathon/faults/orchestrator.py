"""Inject and revert the scheduled faults on a live backend, and sample their symptom probes.

The runner calls `step(t)` before each tick, so injection and revert happen between invocations
(the paper's schedule clock). Change-driven faults go through `backend.release` like any other
release and are reverted by a second release that restores exactly what the first one changed;
direct faults run their Chaos Toolkit experiment (method at injection, rollbacks at revert).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_marathon.backends.base import (
    ActionResult,
    Backend,
    BackendError,
    env_value_from_artifact,
)
from pytest_marathon.faults import chaos, chaos_actions
from pytest_marathon.faults.catalog import CatalogEntry
from pytest_marathon.faults.schedule import Schedule, ScheduledFault

_run_keys = itertools.count(1)


@dataclass
class _Live:
    """What the orchestrator must remember to undo one active fault and judge its artifact."""

    fault: ScheduledFault
    restore: dict[str, Any] = field(default_factory=dict)
    faulty_value: str | None = None
    # A chaos action takes effect on the next tick (pods go unready, nodes fail), so the value
    # a direct fault "put there" is read at its first probe sample, not at the injection call.
    faulty_value_settled: bool = False


class Orchestrator:
    """Drives one schedule against one backend; the only caller of the backend's fault API."""

    def __init__(self, backend: Backend, schedule: Schedule) -> None:
        self.backend = backend
        self.schedule = schedule
        self._pending = sorted(schedule.faults, key=lambda f: (f.inject_at, f.fault_id))
        self._live: dict[str, _Live] = {}
        self._history: list[dict[str, Any]] = []
        self._key = f"run-{next(_run_keys)}"
        chaos_actions.register_backend(self._key, backend)

    # the runner's interface ------------------------------------------------------------------
    def step(self, t: float) -> list[dict[str, Any]]:
        """Revert and inject everything due at or before t, in time order (a revert before an
        injection at the same instant, so the concurrency cap holds). Returns the schedule
        records of the faults injected now."""
        injected = []
        while True:
            due_revert = min(
                (lv.fault for lv in self._live.values() if lv.fault.revert_at <= t),
                key=lambda f: (f.revert_at, f.fault_id),
                default=None,
            )
            due_inject = (
                self._pending[0] if self._pending and self._pending[0].inject_at <= t else None
            )
            if due_revert is None and due_inject is None:
                return injected
            if due_revert is not None and (
                due_inject is None or due_revert.revert_at <= due_inject.inject_at
            ):
                self._revert(self._live.pop(due_revert.fault_id), due_revert.revert_at)
            else:
                assert due_inject is not None
                self._pending.pop(0)
                self._inject(due_inject)
                injected.append(due_inject.record())

    def active(self) -> list[ScheduledFault]:
        return sorted((lv.fault for lv in self._live.values()), key=lambda f: f.fault_id)

    def probe_samples(self, t: float) -> list[dict[str, Any]]:
        """`probes.jsonl` records of every active fault: is its symptom gone, and has its
        responsible artifact been changed away from the value the fault put there."""
        samples = []
        for live in sorted(self._live.values(), key=lambda lv: lv.fault.fault_id):
            entry = live.fault.entry
            samples.append(
                {
                    "t": t,
                    "fault_id": live.fault.fault_id,
                    "healthy": bool(self.backend.probe(entry.probe)),
                    "artifact_corrected": self._artifact_corrected(live),
                }
            )
        return samples

    def finish(self) -> None:
        """Revert whatever is still active (end of run) and release the chaos registry."""
        for fault_id in sorted(self._live):
            live = self._live.pop(fault_id)
            self._revert(live, self.backend.now)
        chaos_actions.unregister_backend(self._key)

    def history(self) -> list[dict[str, Any]]:
        """Every injection and revert with its outcome (for the run log, never for agents)."""
        return list(self._history)

    # mechanics -------------------------------------------------------------------------------
    def _inject(self, fault: ScheduledFault) -> None:
        entry = fault.entry
        live = _Live(fault)
        try:
            if entry.mechanism == "direct":
                assert entry.experiment is not None
                chaos.run_method(entry.experiment, self._key, fault.fault_id)
                ok, message = True, "started"
            else:
                live.restore = snapshot(self.backend, entry)
                result = release_change(self.backend, entry)
                ok, message = result.ok, result.message
        except (BackendError, chaos.ChaosError) as exc:
            ok, message = False, str(exc)
        live.faulty_value = self.backend.artifact_value(entry.artifact)
        live.faulty_value_settled = entry.mechanism != "direct"
        self._live[fault.fault_id] = live
        self._note(fault, "inject", fault.inject_at, ok, message)

    def _revert(self, live: _Live, t: float) -> None:
        fault = live.fault
        try:
            if fault.entry.mechanism == "direct":
                assert fault.entry.experiment is not None
                chaos.run_rollbacks(fault.entry.experiment, self._key, fault.fault_id)
                ok, message = True, "stopped"
            else:
                result = restore_change(self.backend, fault.entry, live.restore)
                ok, message = result.ok, result.message
        except (BackendError, chaos.ChaosError) as exc:
            ok, message = False, str(exc)
        self._note(fault, "revert", t, ok, message)

    def _artifact_corrected(self, live: _Live) -> bool:
        current = self.backend.artifact_value(live.fault.entry.artifact)
        if not live.faulty_value_settled:
            live.faulty_value, live.faulty_value_settled = current, True
            return False
        return current is not None and current != live.faulty_value

    def _note(self, fault: ScheduledFault, action: str, t: float, ok: bool, message: str) -> None:
        self._history.append(
            {"t": t, "fault_id": fault.fault_id, "action": action, "ok": ok, "message": message}
        )


def snapshot(backend: Backend, entry: CatalogEntry) -> dict[str, Any]:
    """The values a change-driven fault is about to overwrite, so its revert restores them."""
    target = entry.target
    restore: dict[str, Any] = {}
    if entry.patch is not None or entry.image is not None:
        restore["image"] = backend.artifact_value(f"image:{target}")
    if entry.env:
        restore["env"] = {
            var: env_value_from_artifact(backend.artifact_value(f"env:{target}/{var}"))
            for var in entry.env
        }
    if entry.resources:
        restore["resources"] = {
            key: backend.artifact_value(f"limits:{target}/{key.rsplit('.', 1)[-1]}")
            for key in entry.resources
        }
    if entry.probes:
        restore["probes"] = {kind: _current_probe(backend, target, kind) for kind in entry.probes}
    if entry.strategy is not None:
        restore["strategy"] = backend.resources("deployments", target)[0]["spec"]["strategy"]
    return restore


def release_change(backend: Backend, entry: CatalogEntry) -> ActionResult:
    """Deliver a change-driven fault as one ordinary release."""
    return backend.release(
        entry.target,
        image=entry.image,
        env=dict(entry.env) or None,
        resources=dict(entry.resources) or None,
        probes=dict(entry.probes) or None,
        patch=entry.patch,
        strategy=entry.strategy,
        change_cause=entry.change_cause,
    )


def restore_change(
    backend: Backend, entry: CatalogEntry, restore: Mapping[str, Any]
) -> ActionResult:
    """Undo a change-driven fault with a release that puts back the snapshot's values; an
    image restore also undoes a code patch (the pre-change image holds the pre-change source)."""
    return backend.release(
        entry.target,
        image=restore.get("image"),
        env=restore.get("env"),
        resources={k: v for k, v in restore.get("resources", {}).items() if v is not None} or None,
        probes=restore.get("probes"),
        strategy=restore.get("strategy"),
        change_cause=f'Revert "{entry.change_cause}"',
    )


def _current_probe(backend: Backend, deployment: str, kind: str) -> Any:
    """The probe's fields as the deployment holds them (the backend reports them as JSON)."""
    value = backend.artifact_value(f"probe:{deployment}/{kind}")
    return None if value is None else json.loads(value)
