"""Which applications a marathon can run on: a twin under `twin/apps/` and a fault catalog under
`fault_catalog/` whose admission record exists (`validate-catalog --write-scope` wrote it): a
catalog nobody admitted may hold entries that are unobservable or unfair to repair, and a score
drawn from them would measure the catalog, not the agent. An app with a twin and no catalog
(AIOpsLab's HotelReservation and SocialNetwork) runs its episodic problems only (`--marathon-mode=episodic`), so a marathon on it is refused up front with
that reason instead of failing when the schedule is drawn; one with neither is refused as such."""

from __future__ import annotations

from importlib import resources

from pytest_marathon.config import available_apps
from pytest_marathon.faults.admission_record import RECORD_NAME


def marathon_apps() -> list[str]:
    return [app for app in available_apps() if _has_catalog(app) and _admitted(app)]


def _has_catalog(app: str) -> bool:
    return (resources.files("pytest_marathon.fault_catalog") / app).is_dir()


def _admitted(app: str) -> bool:
    return (resources.files("pytest_marathon.fault_catalog") / app / RECORD_NAME).is_file()


def marathon_app_problem(app: str) -> str | None:
    """Why `app` cannot run a marathon (None: it can)."""
    if app in marathon_apps():
        return None
    if app in available_apps() and _has_catalog(app):
        return (f"app {app!r} has a fault catalog that has not been admitted yet: run "
                f"`pytest-marathon validate-catalog --app {app} --write-scope`; "
                f"marathon apps: {', '.join(marathon_apps())}")
    if app in available_apps():
        from pytest_marathon.episodic.problems import aiopslab_problems

        if any(problem.app == app for problem in aiopslab_problems()):
            return (f"app {app!r} has no fault catalog: it runs AIOpsLab's problems with "
                    f"--marathon-mode=episodic; marathon apps: {', '.join(marathon_apps())}")
        return (f"app {app!r} has no fault catalog and no episodic problems yet: its twin runs for tests only; "
                f"marathon apps: {', '.join(marathon_apps())}")
    return f"unknown app {app!r}; choose one of: {', '.join(marathon_apps())}"
