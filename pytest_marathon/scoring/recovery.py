"""A killed run's schedule, redrawn from its seed, its salt and the catalog it used.

The runner holds the schedule in memory until the bundle is finished, so a SIGKILL leaves a
`running` bundle without one. Its schedule is still a pure function of the manifest's release,
app, scenario, seed and (for a salted run) run salt, drawn from the scenario and catalog files
whose digests the manifest recorded at start. The scorer redraws it only when the installed
files are exactly those (same release, same digests) and keeps the faults injected by the last
recorded moment, as an interrupted run's held schedule would; otherwise it refuses, naming the
difference, rather than score the run against another world's faults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import RELEASE
from ..bundle import Bundle
from .evidence import ScoreRefusal


def schedule_records(
    bundle: Bundle, run_end: float, *, salted: bool, run_salt: str | None
) -> tuple[list[dict[str, Any]], bool]:
    """The schedule records to score and whether they were redrawn (a killed run's)."""
    records = bundle.stream("schedule")
    if bundle.status != "running" or records:
        return records, False
    if salted and run_salt is None:
        raise ScoreRefusal(
            f"{bundle.path} was killed before it revealed its seed salt, so its schedule must be "
            "redrawn with it: give the run's seed salt (--seed-salt / seed_salt=)"
        )
    return redraw(bundle.path, bundle.manifest, run_end, run_salt), True


def redraw(
    where: object, manifest: Mapping[str, Any], run_end: float, run_salt: str | None
) -> list[dict[str, Any]]:
    from ..faults import CatalogError, ScenarioError, ScheduleError, schedule_for
    from ..faults.digests import catalog_digest, scenario_digest

    config = manifest.get("config")
    config = config if isinstance(config, Mapping) else {}
    app, scenario = str(manifest.get("app")), str(manifest.get("scenario"))
    if manifest.get("release") != RELEASE:
        raise ScoreRefusal(
            f"{where} was recorded by {manifest.get('release')!r}; its schedule can only be "
            f"redrawn by that release (this is {RELEASE!r})"
        )
    try:
        installed = {
            "catalog_digest": catalog_digest(app),
            "scenario_digest": scenario_digest(scenario),
        }
    except (CatalogError, ScenarioError, KeyError, OSError, ValueError) as exc:
        raise ScoreRefusal(f"cannot redraw the schedule of {where}: {exc}") from None
    for name, digest in installed.items():
        if config.get(name) != digest:
            what = "fault catalog" if name == "catalog_digest" else "scenario file"
            raise ScoreRefusal(
                f"cannot redraw the schedule of {where}: the installed {what} of {app!r}/"
                f"{scenario!r} differs from the one the run used ({name} {config.get(name)!r} "
                f"in its manifest, {digest!r} installed)"
            )
    try:
        schedule = schedule_for(app, scenario, int(manifest["seed"]), salt=run_salt)
    except (CatalogError, ScenarioError, ScheduleError, KeyError, ValueError) as exc:
        raise ScoreRefusal(f"cannot redraw the schedule of {where}: {exc}") from None
    return [record for record in schedule.records() if record["inject_at"] <= run_end]
