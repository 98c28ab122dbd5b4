"""Run the direct faults' Chaos Toolkit experiments in two halves: method at injection, rollbacks
at revert.

chaoslib's `run_experiment` runs method and rollbacks back to back, but a marathon fault stays
active for minutes of virtual time between them, so the orchestrator drives the two halves itself
with chaoslib's activity runner. Experiments are validated with chaoslib when loaded.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from chaoslib.activity import run_activity
from chaoslib.exceptions import ChaosException
from chaoslib.experiment import ensure_experiment_is_valid

from pytest_marathon.backends.base import BackendError

ACTIONS_MODULE = "pytest_marathon.faults.chaos_actions"

# chaoslib logs every activity at INFO; a marathon runs hundreds, and the run's own log is not
# the place for them.
logging.getLogger("chaostoolkit").setLevel(logging.WARNING)


class ChaosError(RuntimeError):
    """An experiment that is invalid or whose action failed."""


def validate_experiment(experiment: Mapping[str, Any]) -> None:
    """chaoslib's validation, plus: every activity is one of our python actions."""
    try:
        ensure_experiment_is_valid(dict(experiment))
    except ChaosException as exc:
        raise ChaosError(f"invalid experiment: {exc}") from exc
    for activity in list(experiment["method"]) + list(experiment.get("rollbacks", [])):
        provider = activity.get("provider", {})
        if provider.get("type") != "python" or provider.get("module") != ACTIONS_MODULE:
            raise ChaosError(f"activity {activity.get('name')!r} must call {ACTIONS_MODULE}")


def run_method(experiment: Mapping[str, Any], backend_key: str, fault_key: str) -> list[Any]:
    """Start the fault: run the experiment's method activities in order."""
    return _run(experiment.get("method", []), backend_key, fault_key)


def run_rollbacks(experiment: Mapping[str, Any], backend_key: str, fault_key: str) -> list[Any]:
    """End the fault: run the experiment's rollbacks."""
    return _run(experiment.get("rollbacks", []), backend_key, fault_key)


def _run(activities: list[Any], backend_key: str, fault_key: str) -> list[Any]:
    configuration = {"backend_key": backend_key, "fault_key": fault_key}
    results = []
    for activity in activities:
        try:
            results.append(run_activity(activity, configuration, {}))
        except (ChaosException, BackendError, LookupError) as exc:
            raise ChaosError(f"activity {activity.get('name')!r} failed: {exc}") from exc
    return results
