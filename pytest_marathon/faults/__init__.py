"""Faults: the catalog, scenarios, the seeded schedule, the orchestrator and admission.

See docs/internals.md for the contracts of this package. Nothing here may be reachable from the
agent interface: it is the benchmark's hidden ground truth.
"""

from pytest_marathon.faults.catalog import Catalog, CatalogEntry, CatalogError, load_catalog
from pytest_marathon.faults.orchestrator import Orchestrator
from pytest_marathon.faults.scenario import Scenario, ScenarioError, load_scenario
from pytest_marathon.faults.schedule import Schedule, ScheduledFault, ScheduleError, schedule_for

__all__ = [
    "Catalog",
    "CatalogEntry",
    "CatalogError",
    "Orchestrator",
    "Scenario",
    "ScenarioError",
    "Schedule",
    "ScheduleError",
    "ScheduledFault",
    "load_catalog",
    "load_scenario",
    "schedule_for",
]
