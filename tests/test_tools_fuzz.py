"""Hypothesis fuzzes every tool's arguments: no exception or traceback reaches the agent, and a
rejected call changes nothing."""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_marathon.interface import TOOLS, InProcessClient, ToolSession
from pytest_marathon.interface.standalone import warmed_up

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30), st.sampled_from(["cartservice", "frontend", "loadgenerator", "secrets", "inc-1",
                                           "pods", "up", "rate(x[5m])", "service.py", "boutique"]),
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)


@functools.cache
def _world():
    backend, engine = warmed_up("boutique", 11)
    session = ToolSession(backend, alerts=engine.history)
    session.begin_invocation(1, backend.now)
    client = InProcessClient(session)
    client.call("report_incidents", incidents=[{"incident_id": "inc-1"}])
    return session, client


def _state(session) -> str:
    backend = session.backend
    return json.dumps(
        [backend.resources("deployments"), backend.resources("configmaps"), session.incidents()],
        sort_keys=True, default=str,
    )


def _arguments(spec):
    keys = list(spec.input_schema.get("properties", {})) + ["unexpected"]
    return st.dictionaries(st.sampled_from(keys), VALUES, max_size=len(keys))


@pytest.mark.parametrize("spec", TOOLS, ids=[spec.name for spec in TOOLS])
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_arguments_never_escape_and_rejected_calls_change_nothing(spec, data):
    session, _ = _world()
    args = data.draw(_arguments(spec))
    before = _state(session)
    answer = session.call(spec.name, args)
    assert isinstance(answer, dict)
    text = json.dumps(answer)
    assert "Traceback" not in text and 'File "' not in text
    if "error" in answer:
        assert answer["verdict"] in {"error", "refused", "forbidden"}
        assert _state(session) == before, (spec.name, args, answer)
