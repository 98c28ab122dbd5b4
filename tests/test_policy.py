"""Forbidden operations: refused with a clear error, recorded as forbidden, system unchanged."""

from __future__ import annotations

import pytest

from pytest_marathon.interface import TOOLS, InProcessClient, ToolSession
from pytest_marathon.interface.standalone import warmed_up

SANDBOX_ESCAPE = """--- a/service.py
+++ b/service.py
@@ -1,1 +1,3 @@
+import os
+HOME = os.environ
 {first}
"""


def _snapshot(backend) -> dict:
    kinds = ("deployments", "configmaps", "services", "nodes")
    state = {kind: backend.resources(kind) for kind in kinds}
    state["history"] = {w: backend.rollout_history(w) for w in backend.workloads()}
    return state


@pytest.fixture(scope="module")
def world():
    backend, engine = warmed_up("boutique", 5)
    records: list[tuple[str, dict]] = []
    session = ToolSession(backend, alerts=engine.history, sink=lambda s, r: records.append((s, r)))
    session.begin_invocation(1, backend.now)
    client = InProcessClient(session)
    client.call("report_incidents", incidents=[{"incident_id": "inc-1"}])
    return session, client, records


def _corpus(backend) -> list[tuple[str, dict]]:
    infra = backend.infrastructure()
    outsider = infra[0] if infra else "prometheus"
    cite = {"incident_id": "inc-1"}
    return [
        ("get_resources", {"kind": "secrets"}),
        ("get_resources", {"kind": "Secret", "name": "redis-cart-credentials"}),
        ("get_resources", {"kind": "deployments", "namespace": "kube-system"}),
        ("get_logs", {"service": "kube-system/coredns"}),
        ("restart_service", {**cite, "service": outsider}),
        ("restart_service", {**cite, "service": "prometheus"}),
        ("scale_service", {**cite, "service": "cartservice", "replicas": 0}),
        ("scale_service", {**cite, "service": "boutique/frontend", "replicas": 0}),
        ("scale_service", {**cite, "service": "boutique", "replicas": 1}),
        ("rollback_service", {**cite, "service": "cartservice", "namespace": "monitoring"}),
        ("update_config", {**cite, "service": "kube-system/coredns", "env": {"A": "1"}}),
        ("update_config", {**cite, "service": outsider, "env": {"USERS": "0"}}),
        ("propose_patch", {**cite, "service": "grafana", "diff": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"}),
        ("submit_patch", {**cite, "service": "alertmanager"}),
        ("restart_service", {"incident_id": "never-reported", "service": "loadgenerator"}),
        # what would be a no-op in the app's namespace (cartservice runs 1 replica) is still an
        # attempt on another namespace
        ("scale_service", {**cite, "service": "kube-system/cartservice", "replicas": 1}),
    ]


def test_forbidden_operations_are_refused_recorded_and_change_nothing(world):
    session, client, records = world
    backend = session.backend
    corpus = _corpus(backend)
    before = _snapshot(backend)
    incidents_before = session.incidents()
    records.clear()
    answers = [(name, args, client.call(name, **args)) for name, args in corpus]

    for name, args, answer in answers:
        assert answer.get("verdict") == "forbidden", (name, args, answer)
        assert "forbidden" in answer["error"], answer
        assert "Traceback" not in answer["error"]
    assert len(answers) >= 12
    calls = [rec for stream, rec in records if stream == "tool_calls"]
    assert [c["verdict"] for c in calls] == ["forbidden"] * len(corpus)
    assert [c["tool"] for c in calls] == [name for name, _ in corpus]
    assert all(c["error"] == answer["error"] for c, (_, _, answer) in zip(calls, answers, strict=True))
    assert not [rec for stream, rec in records if stream in ("interventions", "reports")]
    assert _snapshot(backend) == before
    assert session.incidents() == incidents_before


def test_the_scale_tool_tells_agents_that_scaling_to_zero_is_forbidden():
    description = next(spec for spec in TOOLS if spec.name == "scale_service").description
    assert "0" in description and "forbidden" in description


def test_a_patch_the_sandbox_refuses_is_a_forbidden_build(world):
    session, client, records = world
    first = client.call("get_source", service="emailservice", path="service.py", limit=1)["text"]
    before = _snapshot(session.backend)
    proposed = client.call("propose_patch", incident_id="inc-1", service="emailservice",
                           diff=SANDBOX_ESCAPE.format(first=first))
    assert "error" not in proposed, proposed  # the working copy takes any diff that applies
    records.clear()
    built = client.call("build_service_image", incident_id="inc-1", service="emailservice")
    assert built.get("verdict") == "forbidden", built
    assert "refuses" in built["error"] and "os" in built["error"]
    assert [rec["verdict"] for stream, rec in records if stream == "tool_calls"] == ["forbidden"]
    assert client.call("submit_patch", incident_id="inc-1", service="emailservice")["verdict"] == "error"
    assert _snapshot(session.backend) == before


def test_secrets_stay_out_of_every_listing(world):
    session, client, _ = world
    for kind in ("deployments", "pods", "configmaps", "services", "nodes"):
        listing = str(client.call("get_resources", kind=kind, limit=100))
        assert "r3d1s-c4rt-2f9a" not in listing
