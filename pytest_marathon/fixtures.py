"""Fixtures for agent developers' own suites: the live system, the orchestrator, whole runs.

Each xdist worker is its own process with its own twin, so the session-scoped backend is never
shared across workers; the only cross-process state is the noop baseline cache, which is locked.
The fixtures take app, seed and scenario from the marathon options (first value of each) so a
suite can be pointed at another configuration from the command line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.config import DEFAULT_SCENARIO, RunConfig
from pytest_marathon.plugin_options import SETTINGS, MarathonSettings
from pytest_marathon.results import MarathonResult

FIXTURE_APP = "boutique"


def _target(settings: MarathonSettings) -> tuple[str, int, str]:
    app = settings.apps[0] if settings.apps else FIXTURE_APP
    return app, settings.seeds[0], settings.scenarios[0]


@pytest.fixture(scope="session")
def marathon_backend(request: pytest.FixtureRequest) -> Any:
    """The live system (a twin by default) of the configured app and seed, at the start of its
    warm-up; advancing it is the caller's business."""
    from pytest_marathon.backends import create_backend

    settings = request.config.stash[SETTINGS]
    app, seed, _ = _target(settings)
    return create_backend(app, seed, backend=settings.backend, **dict(settings.backend_options))


@pytest.fixture(scope="session")
def marathon_orchestrator(request: pytest.FixtureRequest, marathon_backend: Any) -> Iterator[Any]:
    """The orchestrator of the configured scenario's schedule on `marathon_backend`; whatever
    is still injected is reverted at the end of the session."""
    from pytest_marathon.faults import Orchestrator, schedule_for
    from pytest_marathon.seed_salt import run_salt

    settings = request.config.stash[SETTINGS]
    app, seed, scenario = _target(settings)
    salt = None if settings.seed_salt is None else run_salt(settings.seed_salt, app, scenario, seed)
    orchestrator = Orchestrator(marathon_backend, schedule_for(app, scenario, seed, salt=salt))
    yield orchestrator
    orchestrator.finish()


@dataclass
class MarathonHarness:
    """`marathon.run(agent=..., app=..., seed=...)` runs a whole scored marathon."""

    settings: MarathonSettings
    out_dir: Path

    def run(
        self,
        agent: Any,
        app: str = FIXTURE_APP,
        seed: int = 1,
        scenario: str = DEFAULT_SCENARIO,
        **overrides: Any,
    ) -> MarathonResult:
        """Run `agent` (an object with `invoke(ctx)`, or a spec such as `"runbook"`).

        `overrides` are further `RunConfig` fields (`delta_s`, `budget_s`, `mutation_cap`, …);
        the session's seed salt applies unless `seed_salt` is given, and so do its model
        record/replay folders unless `record_model` / `replay_model` are.
        """
        from pytest_marathon.runner import run_marathon

        if isinstance(agent, str):
            spec, instance = agent, None
        else:
            spec, instance = getattr(agent, "name", None) or type(agent).__name__, agent
        config = RunConfig(
            app=app,
            agent=spec,
            seed=seed,
            scenario=scenario,
            backend=self.settings.backend,
            backend_options=self.settings.backend_options,
            out_dir=self.out_dir,
            **{
                "delta_s": self.settings.delta_s,
                "budget_s": self.settings.budget_s,
                "max_cost_usd": self.settings.max_cost_usd,
                "price_table": self.settings.price_table,
                "model": self.settings.model,
                "seed_salt": self.settings.seed_salt,
                "record_model": self.settings.record_model,
                "replay_model": self.settings.replay_model,
                **overrides,
            },
        )
        return run_marathon(
            config,
            agent=instance,
            baseline_cache=self.settings.cache_dir,
            sign_key=self.settings.sign_key,
            isolation_required=self.settings.require_isolation,
        )


@pytest.fixture
def marathon(request: pytest.FixtureRequest, tmp_path: Path) -> MarathonHarness:
    """Run marathons inside a test; bundles go to the test's tmp_path."""
    return MarathonHarness(request.config.stash[SETTINGS], tmp_path / "bundles")
