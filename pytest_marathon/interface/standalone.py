"""A fresh twin warmed up to t=0 with its alert engine, behind a ToolSession.

This is what `pytest-marathon mcp` serves and what a test or benchmark builds to compare the MCP
path with the in-process one: the same app and seed always give the same session state.
"""

from __future__ import annotations

from pytest_marathon.alerting import AlertEngine, load_rule_pack
from pytest_marathon.backends import create_backend
from pytest_marathon.interface.policy import PolicyConfig
from pytest_marathon.interface.session import ToolSession

WARMUP_S = 300.0
ALERT_EVERY_S = 15.0


def warmed_up(app: str, seed: int, until: float = 0.0) -> tuple[object, AlertEngine]:
    """A twin and its alert engine run from the start of the warm-up to `until`."""
    backend = create_backend(app, seed)
    engine = AlertEngine(load_rule_pack(app), backend.store, backend.namespace)
    t = float(backend.now)
    tick = float(backend.tick_seconds)
    while t < until:
        t = round(t + tick, 6)
        backend.advance_to(t)
        if t % ALERT_EVERY_S == 0:
            engine.evaluate(t)
    return backend, engine


def standalone_session(app: str, seed: int, policy: PolicyConfig = PolicyConfig()) -> ToolSession:  # noqa: B008
    backend, engine = warmed_up(app, seed)
    session = ToolSession(backend, alerts=engine.history, policy=policy)  # type: ignore[arg-type]
    session.begin_invocation(0, float(backend.now))
    return session
