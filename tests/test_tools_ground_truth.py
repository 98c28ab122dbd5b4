"""No tool answer carries ground truth: catalog ids, patch file names, a fault's hidden defect
text, chaos handles, or words that say a change was planted — on twins whose faults arrived through
the orchestrator's schedule and directly through the backend's fault API."""

from __future__ import annotations

import json
import re

from pytest_marathon.faults import Orchestrator, load_catalog, load_scenario, schedule_for
from pytest_marathon.faults.catalog import catalog_root
from pytest_marathon.interface import InProcessClient, ToolSession
from pytest_marathon.interface.standalone import warmed_up

GIVEAWAY = re.compile(r"\b(faults?|faulty|inject\w*|chaos\w*|marathon)\b", re.IGNORECASE)
ALERT_EVERY_S = 15

# one of each chaos kind the twin offers (the redis ones exclude each other: one is enough)
CHAOS: list[tuple[str, str, dict]] = [
    ("pod_kill", "adservice", {"count": 1}),
    ("cpu_hog", "currencyservice", {"cores": 2}),
    ("memory_hog", "recommendationservice", {"size": "200Mi"}),
    ("network_delay", "productcatalogservice", {"delay_ms": 400}),
    ("network_loss", "shippingservice", {"loss": 0.3}),
    ("partition", "checkoutservice", {"peer": "paymentservice"}),
    ("credential_rotation", "redis-cart", {"new_password": "rotated-credential-7"}),
    ("node_failure", "emailservice", {}),
]
CHANGE_KINDS = ("patch", "image", "env", "resources", "probes")


def _run(backend, engine, orchestrator, until: float) -> None:
    t = float(backend.now)
    while t < until:
        t = round(t + backend.tick_seconds, 6)
        if orchestrator is not None:
            orchestrator.step(t)
        backend.advance_to(t)
        if t % ALERT_EVERY_S == 0:
            engine.evaluate(t)


def _answers(client: InProcessClient, backend) -> list[dict]:
    answers = [
        client.call("get_alerts", limit=200),
        client.call("get_topology"),
        client.call("get_logs", limit=200, level="error", since=-300),
        client.call("get_logs", limit=200, level="warning", since=-300),
        client.call("query_metrics", query="sum by (reason) (kube_pod_container_status_waiting_reason)"),
        client.call("query_metrics", query="sum by (service_name, server_address, rpc_grpc_status_code) "
                                           "(traces_span_metrics_calls_total{span_kind=\"SPAN_KIND_CLIENT\"})",
                    max_series=200),
    ]
    logs = client.call("get_logs", limit=200, since=-300)
    answers.append(logs)
    for offset in (200, 400):
        answers.append(client.call("get_logs", limit=200, since=-300, offset=offset))
    events = client.call("get_events", limit=200, since=-300)
    answers.append(events)
    if events.get("next_offset"):
        answers.append(client.call("get_events", limit=200, since=-300, offset=events["next_offset"]))
    traces = client.call("get_traces", limit=50, errors_only=True, since=-300)
    answers.append(traces)
    answers += [client.call("get_trace", trace_id=t["trace_id"]) for t in traces["traces"][:10]]
    for kind in ("deployments", "pods", "services", "configmaps", "nodes"):
        listing = client.call("get_resources", kind=kind, limit=100)
        answers.append(listing)
        for item in listing.get("items", []):
            answers.append(client.call("get_resources", kind=kind, name=item["name"]))
    for service in backend.workloads():
        history = client.call("get_rollout_history", service=service)
        answers.append(history)
        revisions = [r.get("revision") for r in history.get("revisions", [])]
        if len(revisions) > 1:
            answers.append(client.call("get_source", service=service, from_revision=revisions[0], to_revision=revisions[-1]))
        listing = client.call("get_source", service=service)
        answers.append(listing)
        for file in listing.get("files", []):
            answers.append(client.call("get_source", service=service, path=file["path"], limit=2000))
    return answers


def _assert_nothing_given_away(text: str, catalog) -> None:
    for entry in catalog.entries:
        assert entry.id not in text, entry.id
        if entry.defect:
            assert entry.defect not in text, entry.id
    patches = catalog_root("boutique") / "patches"
    for patch in patches.iterdir() if patches.is_dir() else []:
        assert patch.name not in text and patch.name.rsplit(".", 1)[0] not in text, patch.name
    found = GIVEAWAY.search(text)
    assert found is None, text[max(found.start() - 200, 0) : found.end() + 200]


def test_tool_answers_never_reveal_the_schedule_or_the_catalog():
    catalog = load_catalog("boutique")
    schedule = schedule_for("boutique", load_scenario("short-5"), 2, catalog)
    backend, engine = warmed_up("boutique", 2)
    _run(backend, engine, Orchestrator(backend, schedule), max(f.inject_at for f in schedule.faults) + 60)
    client = InProcessClient(ToolSession(backend, alerts=engine.history))
    _assert_nothing_given_away(json.dumps(_answers(client, backend)), catalog)


def test_faults_applied_through_the_fault_api_leave_no_trace_of_how_they_came():
    catalog = load_catalog("boutique")
    backend, engine = warmed_up("boutique", 4)
    released = []
    for kind in CHANGE_KINDS:
        entry = next(e for e in catalog.entries if e.mechanism == "change" and getattr(e, kind)
                     and e.target not in {r.target for r in released})
        result = backend.release(entry.target, image=entry.image, env=dict(entry.env) or None,
                                 resources=dict(entry.resources) or None, probes=dict(entry.probes) or None,
                                 patch=entry.patch, change_cause=entry.change_cause)
        assert result.ok, (entry.id, result.message)
        released.append(entry)
    handles = [backend.chaos_start(kind, target, **params) for kind, target, params in CHAOS]
    _run(backend, engine, None, 180.0)
    client = InProcessClient(ToolSession(backend, alerts=engine.history))
    answers = _answers(client, backend)
    assert any(a.get("alerts") for a in answers), "the faults should have made alerts fire"
    text = json.dumps(answers)
    _assert_nothing_given_away(text, catalog)
    for handle in handles:
        assert handle not in text
