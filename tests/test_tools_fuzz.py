"""Hypothesis fuzzes every tool's arguments: no exception or traceback reaches the agent, and a
rejected call changes nothing. Two strategies: arbitrary JSON (mostly stopped by the schemas) and
arguments drawn from each tool's own published schema (so the handlers, policy and backend run)."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_marathon.interface import TOOLS, InProcessClient, ToolSession
from pytest_marathon.interface.standalone import warmed_up

NAMES = ["cartservice", "frontend", "redis-cart", "loadgenerator", "prometheus", "secrets", "inc-1",
         "pods", "configmaps", "up", "rate(x[5m])", "service.py", "boutique", "kube-system/coredns",
         "adsEnabled", "feature-flags"]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30), st.sampled_from(NAMES),
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


def _arbitrary(spec) -> st.SearchStrategy[dict]:
    keys = list(spec.input_schema.get("properties", {})) + ["unexpected"]
    return st.dictionaries(st.sampled_from(keys), VALUES, max_size=len(keys))


def _from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values that (mostly) satisfy a schema of the registry's subset of JSON Schema."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([_from_schema({**schema, "type": k}) for k in kind])
    if kind == "object":
        properties = schema.get("properties", {})
        required = set(schema.get("required", ()))
        fixed = {k: _from_schema(v) for k, v in properties.items() if k in required}
        optional = {k: _from_schema(v) for k, v in properties.items() if k not in required}
        if not properties and isinstance(schema.get("additionalProperties"), dict):
            return st.dictionaries(st.from_regex(r"\A[A-Z_]{1,8}\Z"), _from_schema(schema["additionalProperties"]), max_size=3)
        return st.fixed_dictionaries(fixed, optional=optional)
    if kind == "array":
        return st.lists(_from_schema(schema.get("items", {})), max_size=3)
    if kind == "integer":
        return st.integers(schema.get("minimum", -10), min(schema.get("maximum", 10**6), 10**6))
    if kind == "number":
        return st.floats(max(schema.get("minimum", -1e9), -1e4), min(schema.get("maximum", 1e9), 1e4))
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if "pattern" in schema:
        return st.from_regex(schema["pattern"], fullmatch=True).filter(lambda s: len(s) <= 200)
    return st.one_of(st.sampled_from(NAMES), st.text(min_size=schema.get("minLength", 0), max_size=40))


def _check(spec, args) -> None:
    session, _ = _world()
    before = _state(session)
    answer = session.call(spec.name, args)
    assert isinstance(answer, dict)
    text = json.dumps(answer)
    assert "Traceback" not in text and 'File "' not in text
    if "error" in answer:
        assert answer["verdict"] in {"error", "refused", "forbidden"}
        assert _state(session) == before, (spec.name, args, answer)


@pytest.mark.parametrize("spec", TOOLS, ids=[spec.name for spec in TOOLS])
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_arbitrary_arguments_never_escape_and_rejected_calls_change_nothing(spec, data):
    _check(spec, data.draw(_arbitrary(spec)))


@pytest.mark.parametrize("spec", TOOLS, ids=[spec.name for spec in TOOLS])
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_schema_shaped_arguments_never_escape_and_rejected_calls_change_nothing(spec, data):
    _check(spec, data.draw(_from_schema(dict(spec.input_schema))))
