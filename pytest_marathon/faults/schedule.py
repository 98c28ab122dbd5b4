"""The seeded marathon schedule: which catalog faults arrive when, and when they are reverted.

Arrivals are order statistics of a density that rises linearly across the injection window
(four-fold in the marathon), lifetimes are uniform, and a concurrency cap delays an arrival to the
next revert. Categories follow the Ghosh et al. production mix renormalised over what the app's
catalog supports. Every draw comes from its own `rng_for` stream, so the same (app, scenario,
seed) gives a byte-identical schedule. A salted run draws every stream from `salted_rng` keyed by
its run salt instead (pytest_marathon/seed_salt.py), so its schedule cannot be drawn from the
public seed and catalog alone.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_marathon.determinism import rng_for
from pytest_marathon.faults.background import BackgroundRelease
from pytest_marathon.faults.background import draw as draw_background
from pytest_marathon.faults.catalog import CATEGORIES, Catalog, CatalogEntry, load_catalog
from pytest_marathon.faults.scenario import Scenario, load_scenario
from pytest_marathon.seed_salt import salted_rng

# Ghosh et al. (SoCC 2022), share of high-severity incidents per root-cause category, in percent.
GHOSH_MIX: dict[str, float] = {
    "code": 27.0,
    "dependency": 16.4,
    "infrastructure": 15.8,
    "deployment": 13.2,
    "configuration": 12.5,
    "database-network": 10.5,
    "authentication": 4.6,
}


class ScheduleError(ValueError):
    """A schedule that cannot be drawn (e.g. an app with no catalog entries)."""


@dataclass(frozen=True)
class ScheduledFault:
    """One arrival: the catalog entry and the virtual times it is injected and reverted."""

    fault_id: str
    entry: CatalogEntry
    inject_at: float
    revert_at: float

    def record(self) -> dict[str, Any]:
        """The `schedule.jsonl` record (docs/internals.md, bundle streams)."""
        e = self.entry
        return {
            "fault_id": self.fault_id,
            "catalog_id": e.id,
            "category": e.category,
            "mechanism": e.mechanism,
            "target": e.target,
            "culprits": sorted(e.culprits),
            "artifact": e.artifact,
            "aliases": sorted(e.aliases),
            "scope": sorted(e.scope or e.culprits),
            "probe": dict(e.probe),
            "inject_at": self.inject_at,
            "revert_at": self.revert_at,
            "remedy": "none" if e.remedy is None else [dict(step) for step in e.remedy],
        }


@dataclass(frozen=True)
class Schedule:
    app: str
    scenario: Scenario
    seed: int
    faults: tuple[ScheduledFault, ...]
    #: Benign releases (ground truth like the faults; never part of `records()`).
    background: tuple[BackgroundRelease, ...] = ()
    #: The run salt the schedule was drawn with (None: public seed); the orchestrator draws the
    #: wording of every release from it too, so a salted run's texts are as secret as its faults.
    salt: str | None = None

    def records(self) -> list[dict[str, Any]]:
        return [f.record() for f in self.faults]

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, no spaces): equal schedules give equal bytes."""
        return json.dumps(self.records(), sort_keys=True, separators=(",", ":"))

    def active_at(self, t: float) -> list[ScheduledFault]:
        return [f for f in self.faults if f.inject_at <= t < f.revert_at]


def category_mix(categories: Sequence[str]) -> dict[str, float]:
    """The Ghosh mix renormalised over the categories an app supports (fractions summing to 1)."""
    total = sum(GHOSH_MIX[c] for c in categories)
    if not categories or total <= 0:
        raise ScheduleError("no supported fault categories")
    return {c: GHOSH_MIX[c] / total for c in CATEGORIES if c in categories}


def schedule_for(
    app: str,
    scenario: Scenario | str,
    seed: int,
    catalog: Catalog | None = None,
    *,
    salt: str | None = None,
) -> Schedule:
    """Draw the schedule of one (app, scenario, seed); `salt` is the run's salt
    (`seed_salt.run_salt`, `RunConfig.run_salt`), None for the public, seed-only schedule."""
    if isinstance(scenario, str):
        scenario = load_scenario(scenario)

    def rng(purpose: str) -> Any:
        parts = ("schedule", app, scenario.name, purpose)
        return rng_for(seed, *parts) if salt is None else salted_rng(salt, seed, *parts)

    releases = _background(scenario, rng)
    if scenario.arrivals == 0:
        return Schedule(app, scenario, seed, (), releases, salt)
    catalog = catalog if catalog is not None else load_catalog(app)
    if len(catalog) == 0:
        raise ScheduleError(f"the catalog of {app!r} is empty")
    mix = category_mix(catalog.categories())
    arrivals = _arrival_times(scenario, rng("arrivals"))
    lifetime_rng = rng("lifetimes")
    lifetimes = [
        float(round(lifetime_rng.uniform(scenario.lifetime_min_s, scenario.lifetime_max_s)))
        for _ in arrivals
    ]
    categories = _categories(mix, len(arrivals), rng("categories"))
    picker = _EntryPicker(catalog, mix, rng("entries"))
    faults: list[ScheduledFault] = []
    earliest = 0.0
    for nominal, lifetime, category in zip(arrivals, lifetimes, categories):
        start = max(nominal, earliest)  # first come, first served behind a delayed arrival
        active = [f for f in faults if f.revert_at > start]
        while len(active) >= scenario.max_concurrent:
            start = min(f.revert_at for f in active)
            active = [f for f in active if f.revert_at > start]
        earliest = start
        entry = picker.pick(category, [f.entry for f in active])
        fault_id = f"f{len(faults) + 1:02d}"
        faults.append(ScheduledFault(fault_id, entry, start, start + lifetime))
    return Schedule(app, scenario, seed, tuple(faults), releases, salt)


def _background(scenario: Scenario, rng: Any) -> tuple[BackgroundRelease, ...]:
    """The scenario's benign releases, from streams of their own (the faults' draws never move)."""
    count = scenario.background_releases
    if count == 0 or scenario.injection_window_s <= 0:
        return ()
    times = _arrival_times(scenario, rng("background-arrivals"), count)
    lifetime_rng = rng("background-lifetimes")
    lifetimes = [
        float(round(lifetime_rng.uniform(scenario.lifetime_min_s, scenario.lifetime_max_s)))
        for _ in times
    ]
    return draw_background(count, times, lifetimes, rng("background-kinds"))


def _arrival_times(scenario: Scenario, rng: Any, count: int | None = None) -> list[float]:
    """Order statistics of the linear intensity a -> b over the window (inverse-CDF draws)."""
    a, b, window = scenario.intensity_start, scenario.intensity_end, scenario.injection_window_s
    times = []
    for _ in range(scenario.arrivals if count is None else count):
        u = rng.random()
        if math.isclose(a, b):
            x = u
        else:  # solve (b-a)/2 x^2 + a x = u (a+b)/2 for x in [0, 1]
            x = (-a + math.sqrt(a * a + (b - a) * (a + b) * u)) / (b - a)
        times.append(float(round(x * window)))
    return sorted(times)


def _categories(mix: dict[str, float], n: int, rng: Any) -> list[str]:
    """Systematic sampling: each arrival has exactly the mix as its marginal probability, and a
    run's counts stay within one of n * share, so runs of one length are comparable."""
    offset = rng.random()
    bounds, acc = [], 0.0
    for category, share in mix.items():
        acc += share
        bounds.append((acc, category))
    drawn = []
    for i in range(n):
        point = (offset + i) / n
        drawn.append(next((c for edge, c in bounds if point < edge), bounds[-1][1]))
    rng.shuffle(drawn)
    return drawn


class _EntryPicker:
    """Chooses a compatible entry per arrival: not one holding what an active fault holds (its
    revert would undo the other), preferring entries not yet used in this run."""

    def __init__(self, catalog: Catalog, mix: dict[str, float], rng: Any) -> None:
        self.by_category = {c: [e for e in catalog if e.category == c] for c in mix}
        self.mix = mix
        self.rng = rng
        self.used: set[str] = set()

    def pick(self, category: str, active: list[CatalogEntry]) -> CatalogEntry:
        candidates = [e for e in self.by_category[category] if self._compatible(e, active)]
        if not candidates:  # the whole category is busy: fall back to the mix over the others
            others = {
                c: s
                for c, s in self.mix.items()
                if any(self._compatible(e, active) for e in self.by_category[c])
            }
            if not others:
                raise ScheduleError("no catalog entry is compatible with the active faults")
            category = self.rng.choices(list(others), weights=list(others.values()))[0]
            candidates = [e for e in self.by_category[category] if self._compatible(e, active)]
        fresh = [e for e in candidates if e.id not in self.used] or candidates
        entry = fresh[self.rng.randrange(len(fresh))]
        self.used.add(entry.id)
        return entry

    @staticmethod
    def _compatible(entry: CatalogEntry, active: list[CatalogEntry]) -> bool:
        return all(entry.id != other.id and not entry.holds & other.holds for other in active)
