"""Benign background releases: the ordinary changes a real cluster's history is full of.

A history in which every new revision is a fault lets an agent distrust each new revision
without looking at anything; real teams ship image bumps, rebuilds, configuration and resource
tweaks, probe tuning and replica changes all day, and nearly all of them are fine. A scenario's
`background_releases: N` adds N such releases to a run (0 keeps the paper's exact schedule).

They are drawn like the faults: arrival times from the same rising density over the injection
window, and a change that is undone later (a resized limit, a tuned probe, an extra replica, a
Recreate flip) stays for a lifetime drawn from the fault lifetimes, so "a change, then its undo"
looks the same whichever it is. Every draw comes from the schedule's streams (salted with the
run's salt), and the schedule decides only *when* and *what kind*; the orchestrator picks the
service and the concrete values from the live system when it plans the run (`resolve`).

A background release must never change what a fault does, so it avoids every service a fault
targets while it lasts: a permanent change (a new tag, a harmless commit, an equivalent address)
only needs no fault on its service at its instant, a temporary one none for its whole span.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_marathon.twin.appspec import SERVER_KINDS

#: Kinds and their weights. `rebuild` is a harmless commit under a CI tag (the code family); the
#: others are named by what they change. Weights follow the rough mix of a busy team's history:
#: mostly image releases, then configuration.
KINDS: dict[str, float] = {
    "image": 0.30,
    "rebuild": 0.20,
    "env": 0.14,
    "resources": 0.12,
    "probes": 0.08,
    "replicas": 0.08,
    "recreate": 0.08,
}
#: How long a release keeps its service to itself (a rollout and its readiness checks settle).
SETTLE_S = 120.0
#: Kinds undone after a lifetime (they change behaviour a later fault's symptom could depend on).
TEMPORARY = frozenset({"resources", "probes", "replicas", "recreate"})


@dataclass(frozen=True)
class BackgroundRelease:
    """One planned benign release: when, what kind, and (temporary kinds) when it is undone.
    `seed` drives every later choice for it (service, values, wording)."""

    release_id: str
    kind: str
    at: float
    restore_at: float | None
    seed: int


def draw(count: int, times: Sequence[float], lifetimes: Sequence[float],
         rng: random.Random) -> tuple[BackgroundRelease, ...]:
    """`count` releases at the given sorted `times`, kinds from `KINDS`, each with its own seed."""
    kinds = rng.choices(list(KINDS), weights=list(KINDS.values()), k=count)
    releases = []
    for i, (at, lifetime, kind) in enumerate(zip(times, lifetimes, kinds), start=1):
        restore = at + lifetime if kind in TEMPORARY else None
        releases.append(BackgroundRelease(f"b{i:02d}", kind, at, restore, rng.getrandbits(64)))
    return tuple(releases)


@dataclass(frozen=True)
class Placed:
    """A planned release bound to the service it changes."""

    release: BackgroundRelease
    target: str


def resolve(releases: Sequence[BackgroundRelease], candidates: Mapping[str, Sequence[str]],
            fault_windows: Sequence[tuple[str, float, float]]) -> list[Placed]:
    """Bind each release to a service of its kind that no fault touches while it lasts and no
    earlier background release still holds (within `SETTLE_S` of it); a release with no such service is dropped (a busy
    pipeline waits for the next slot). `fault_windows` are (target, inject_at, revert_at)."""
    placed: list[Placed] = []
    held: list[tuple[str, float, float]] = []  # earlier releases: (target, from, to)
    for release in sorted(releases, key=lambda r: (r.at, r.release_id)):
        start = release.at
        end = release.restore_at if release.restore_at is not None else release.at
        order = sorted(candidates.get(release.kind, ()))
        random.Random(release.seed).shuffle(order)
        for target in order:
            if _busy(target, start, end, fault_windows) or _busy(target, start, end, held):
                continue
            placed.append(Placed(release, target))
            # one release of a service at a time: each holds it while its rollout settles
            held.append((target, start - SETTLE_S, end + SETTLE_S))
            break
    return placed


def _busy(target: str, start: float, end: float, windows: Sequence[tuple[str, float, float]]) -> bool:
    """Whether `target` is held by any window overlapping [start, end] (both ends included: a
    release at the very instant of a fault's injection or revert would race it)."""
    return any(t == target and a <= end and start <= b for t, a, b in windows)


def candidates(topology: Mapping[str, Any]) -> dict[str, list[str]]:
    """The services each kind may change, from the app's topology: every service for most kinds
    (never a datastore), only callers that name another service's address for `env`."""
    code = [d["name"] for d in topology["deployments"] if d.get("kind") not in SERVER_KINDS]
    with_addr = sorted({e["from"] for e in topology["edges"] if e.get("to") is not None} & set(code))
    chosen: dict[str, list[str]] = {kind: code for kind in KINDS if kind != "env"}
    chosen["env"] = with_addr
    return chosen


def plan(releases: Sequence[BackgroundRelease], topology: Mapping[str, Any],
         faults: Sequence[Any]) -> list[Placed]:
    """The releases bound to services for a run of `faults` (scheduled faults: `entry.target`,
    `inject_at`, `revert_at`) on an app with this topology, in time order: what the
    orchestrator ships, and what `pytest-marathon schedule` shows the operator."""
    windows = [(f.entry.target, f.inject_at, f.revert_at) for f in faults]
    return resolve(releases, candidates(topology), windows)
