"""Inject and revert the scheduled faults on a live backend, and sample their symptom probes.

The runner calls `step(t)` before each tick, so injection and revert happen between invocations
(the paper's schedule clock). Change-driven faults go through `backend.release` like any other
release and are reverted by a second release that restores exactly what the first one changed;
direct faults run their Chaos Toolkit experiment (method at injection, rollbacks at revert).

The orchestrator is also the release pipeline of the run: it gives the initial revisions their
change-cause, ships the schedule's benign background releases (faults/background.py) and words
every release, fault or not, from the same grammar (faults/phrasing.py), so neither the text nor
the shape of the history says which revisions are faults. `releases()` is the ground truth of
all of them, held with the schedule.
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
from pytest_marathon.determinism import rng_for
from pytest_marathon.faults import chaos, chaos_actions
from pytest_marathon.faults.background import Placed
from pytest_marathon.faults.background import plan as plan_background
from pytest_marathon.faults.background_changes import Change, plan_change
from pytest_marathon.faults.catalog import CatalogEntry
from pytest_marathon.faults.phrasing import Cause
from pytest_marathon.faults.release_text import describe, fault_cause
from pytest_marathon.faults.schedule import Schedule, ScheduledFault
from pytest_marathon.seed_salt import salted_rng

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
        self._releases: list[dict[str, Any]] = []
        self._released = 0  # how many of `_releases` `take_releases` has handed out
        self._key = f"run-{next(_run_keys)}"
        chaos_actions.register_backend(self._key, backend)
        self._undo: dict[str, tuple[Placed, Change]] = {}
        self._reserved: frozenset[str] = frozenset()
        self._seen: set[tuple[str, str]] = set()  # (deployment, ReplicaSet) that exist
        self._annotate_initial()
        self._background = self._place_background()

    def _rng(self, *purpose: str) -> Any:
        """The stream of one wording or value draw: the schedule's seed, salted like the schedule."""
        s = self.schedule
        parts = ("releases", s.app, s.scenario.name, *purpose)
        return rng_for(s.seed, *parts) if s.salt is None else salted_rng(s.salt, s.seed, *parts)

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
            due_release = (
                self._background[0] if self._background and self._background[0][0] <= t else None
            )
            fault_times = [f.revert_at for f in (due_revert,) if f] + [
                f.inject_at for f in (due_inject,) if f
            ]
            # a background release never shares its service with a fault at its instant, so
            # its order against them only has to be fixed: faults first on a tie
            if due_release is not None and all(due_release[0] < ft for ft in fault_times):
                self._background.pop(0)
                self._ship(*due_release[1:])
                continue
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

    def take_releases(self) -> list[dict[str, Any]]:
        """Ground-truth records (`releases.jsonl`) of the releases made since the last call:
        background releases and their undos, fault injections and reverts that went through the
        release pipeline. Held with the schedule; never for agents."""
        fresh = self._releases[self._released :]
        self._released = len(self._releases)
        return [dict(r) for r in fresh]

    # mechanics -------------------------------------------------------------------------------
    def _inject(self, fault: ScheduledFault) -> None:
        entry = fault.entry
        live = _Live(fault)
        cause: Cause | None = None
        try:
            if entry.mechanism == "direct":
                assert entry.experiment is not None
                chaos.run_method(entry.experiment, self._key, fault.fault_id)
                ok, message = True, "started"
            else:
                live.restore = snapshot(self.backend, entry)
                image = self.backend.artifact_value(f"image:{entry.target}") or ""
                cause = fault_cause(entry, image, self._rng("fault", fault.fault_id))
                result = release_change(self.backend, entry, cause.text)
                ok, message = result.ok, result.message
        except (BackendError, chaos.ChaosError) as exc:
            ok, message = False, str(exc)
        live.faulty_value = self.backend.artifact_value(entry.artifact)
        live.faulty_value_settled = entry.mechanism != "direct"
        self._live[fault.fault_id] = live
        self._note(fault, "inject", fault.inject_at, ok, message)
        if cause is not None:
            self._record(fault.inject_at, "fault", fault.fault_id, entry.target, cause, ok)

    def _revert(self, live: _Live, t: float) -> None:
        fault = live.fault
        cause: Cause | None = None
        try:
            if fault.entry.mechanism == "direct":
                assert fault.entry.experiment is not None
                chaos.run_rollbacks(fault.entry.experiment, self._key, fault.fault_id)
                ok, message = True, "stopped"
            else:
                cause = self._undo_cause(fault.entry.target, live.restore,
                                         self._rng("revert", fault.fault_id))
                result = restore_change(self.backend, fault.entry, live.restore, cause.text)
                ok, message = result.ok, result.message
        except (BackendError, chaos.ChaosError) as exc:
            ok, message = False, str(exc)
        self._note(fault, "revert", t, ok, message)
        if cause is not None:
            self._record(t, "fault-revert", fault.fault_id, fault.entry.target, cause, ok)

    def _undo_cause(self, target: str, restore: Mapping[str, Any], rng: Any) -> Cause:
        """The wording of a release that puts values back: an ordinary release of what it sets."""
        return describe(target, image=restore.get("image"), env=restore.get("env"),
                        resources=restore.get("resources"), probes=restore.get("probes"),
                        strategy=restore.get("strategy"),
                        current_image=self.backend.artifact_value(f"image:{target}") or "",
                        rng=rng)

    def _annotate_initial(self) -> None:
        """The initial deploy is a release too: every workload's first revision gets the text
        an image release of its image would get."""
        for name in self.backend.workloads():
            self._seen.update((name, r["replica_set"]) for r in self.backend.rollout_history(name))
            image = self.backend.artifact_value(f"image:{name}") or ""
            cause = describe(name, current_image=image, rng=self._rng("initial", name))
            self.backend.annotate_change_cause(name, cause.text)

    def _place_background(self) -> list[tuple[float, str, str, Placed]]:
        """The schedule's background releases bound to services, as a time-ordered queue of
        (time, id, "ship" | "undo", placed)."""
        if not self.schedule.background:
            return []
        self._reserved = frozenset(f.entry.image for f in self.schedule.faults if f.entry.image)
        queue: list[tuple[float, str, str, Placed]] = []
        for placed in plan_background(self.schedule.background, self.backend.topology(),
                                      self.schedule.faults):
            queue.append((placed.release.at, placed.release.release_id, "ship", placed))
        return sorted(queue, key=lambda q: (q[0], q[1]))

    def _ship(self, release_id: str, step: str, placed: Placed) -> None:
        """Make a background release (or its undo) through the same release path as a fault."""
        target = placed.target
        if step == "undo":
            assert placed.release.restore_at is not None
            t = placed.release.restore_at
            _, change = self._undo.pop(release_id)
            rng = self._rng("background-undo", release_id)
            if change.undo_replicas is not None:
                self.backend.scale(target, change.undo_replicas)
                self._record(t, "background-undo", release_id, target, None, True)
                return
            assert change.undo is not None
            undo = dict(change.undo)
            if placed.release.kind == "recreate":
                # back to RollingUpdate with the next version, as a team undoes a strategy flip
                # (a strategy alone makes no revision, so nothing would show it)
                bump = plan_change("image", self.backend, target, rng, self._reserved)
                if bump is not None and bump.push is not None:
                    self.backend.push_image(target, bump.push)
                    undo["image"] = bump.push
            cause = self._undo_cause(target, undo, rng)
            result = self.backend.release(target, **undo, change_cause=cause.text)
            self._record(t, "background-undo", release_id, target, cause, result.ok)
            return
        t = placed.release.at
        rng = self._rng("background", release_id)
        later = [f.entry.patch for f in self.schedule.faults
                 if f.entry.target == target and f.entry.patch is not None and f.inject_at >= t]
        change = plan_change(placed.release.kind, self.backend, target, rng, self._reserved, later)
        if change is None:
            return
        if change.replicas is not None:
            self.backend.scale(target, change.replicas)
            self._record(t, "background", release_id, target, None, True)
        else:
            if change.push is not None:
                self.backend.push_image(target, change.push)
            cause = describe(target, **change.release, subject=change.subject,
                             current_image=self.backend.artifact_value(f"image:{target}") or "",
                             rng=rng)
            result = self.backend.release(target, **change.release, patch=change.patch,
                                          change_cause=cause.text)
            self._record(t, "background", release_id, target, cause, result.ok)
        if placed.release.restore_at is not None:
            self._undo[release_id] = (placed, change)
            entry = (placed.release.restore_at, release_id, "undo", placed)
            self._background.append(entry)
            self._background.sort(key=lambda q: (q[0], q[1]))

    def _record(self, t: float, origin: str, ident: str, target: str, cause: Cause | None,
                ok: bool) -> None:
        """One ground-truth line; the state after the release is read back from the backend
        (what an agent sees in the history, with who made it and why)."""
        history = self.backend.rollout_history(target)
        current = next((r for r in history if r.get("current")), None)
        strategy = self.backend.resources("deployments", target)[0]["spec"]["strategy"]["type"]
        created = current is not None and (target, current["replica_set"]) not in self._seen
        if current is not None:
            self._seen.add((target, current["replica_set"]))
        self._releases.append({
            "t": t,
            "origin": origin,
            "id": ident,
            "target": target,
            "change_cause": None if cause is None else cause.text,
            "template": None if cause is None else cause.template,
            "image": self.backend.artifact_value(f"image:{target}"),
            "strategy": strategy,
            "revision": None if current is None else current["revision"],
            "replica_set": None if current is None else current["replica_set"],
            "created": created,  # the release made a new ReplicaSet (a new history entry)
            "ok": ok,
        })

    def _artifact_corrected(self, live: _Live) -> bool:
        current = self.backend.artifact_value(live.fault.entry.artifact)
        if not live.faulty_value_settled:
            live.faulty_value, live.faulty_value_settled = current, True
            return False
        # An artifact the fault set and the remedy removed (an env var back to the program's
        # default, a liveness probe taken off) reads None: changed away from the faulty value
        # all the same. Backends read None only for what is absent; a failed read raises.
        return current != live.faulty_value

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


def release_change(backend: Backend, entry: CatalogEntry, change_cause: str | None = None) -> ActionResult:
    """Deliver a change-driven fault as one ordinary release (worded `change_cause`; the
    catalog's own text when none is given, as admission does)."""
    return backend.release(
        entry.target,
        image=entry.image,
        env=dict(entry.env) or None,
        resources=dict(entry.resources) or None,
        probes=dict(entry.probes) or None,
        patch=entry.patch,
        strategy=entry.strategy,
        change_cause=entry.change_cause if change_cause is None else change_cause,
    )


def restore_change(
    backend: Backend, entry: CatalogEntry, restore: Mapping[str, Any], change_cause: str
) -> ActionResult:
    """Undo a change-driven fault with a release that puts back the snapshot's values; an
    image restore also undoes a code patch (the pre-change image holds the pre-change source).
    It is worded as an ordinary release (`change_cause`), never as an undo of the fault."""
    return backend.release(
        entry.target,
        image=restore.get("image"),
        env=restore.get("env"),
        resources={k: v for k, v in restore.get("resources", {}).items() if v is not None} or None,
        probes=restore.get("probes"),
        strategy=restore.get("strategy"),
        change_cause=change_cause,
    )


def _current_probe(backend: Backend, deployment: str, kind: str) -> Any:
    """The probe's fields as the deployment holds them (the backend reports them as JSON)."""
    value = backend.artifact_value(f"probe:{deployment}/{kind}")
    return None if value is None else json.loads(value)
