"""The 19 tools through the in-process client on a real twin: reads, reports, actions, recording."""

from __future__ import annotations

import difflib

import pytest

from pytest_marathon.interface import CATEGORIES, TOOLS, InProcessClient, PolicyConfig, ToolSession
from pytest_marathon.interface.standalone import warmed_up

ARCHITECTURE_TOOLS = {
    "read": {
        "get_alerts", "query_metrics", "get_logs", "get_traces", "get_trace", "get_topology",
        "get_resources", "get_events", "get_rollout_history", "get_source",
    },
    "report": {"report_incidents"},
    "act": {
        "restart_service", "scale_service", "rollback_service", "update_config", "set_feature_flag",
        "propose_patch", "build_service_image", "submit_patch",
    },
}


@pytest.fixture
def recorded():
    backend, engine = warmed_up("boutique", 3)
    records: list[tuple[str, dict]] = []
    session = ToolSession(
        backend, alerts=engine.history, sink=lambda stream, rec: records.append((stream, rec)),
        policy=PolicyConfig(mutation_cap=3),
    )
    session.begin_invocation(1, backend.now)
    return session, InProcessClient(session), records


def test_the_catalog_of_tools_is_the_architectures_nineteen():
    by_kind: dict[str, set[str]] = {}
    for spec in TOOLS:
        by_kind.setdefault(spec.kind, set()).add(spec.name)
        assert spec.input_schema["type"] == "object"
        assert len(spec.description) > 60
    assert by_kind == ARCHITECTURE_TOOLS
    assert sum(len(v) for v in by_kind.values()) == 19


def test_report_incidents_teaches_the_artifact_vocabulary_and_the_catalogs_categories():
    from pytest_marathon.faults.catalog import CATEGORIES as CATALOG_CATEGORIES

    assert tuple(CATEGORIES) == tuple(CATALOG_CATEGORIES)
    description = next(s for s in TOOLS if s.name == "report_incidents").description
    for form in ("code:<svc>/<path>", "image:<svc>", "env:<svc>/<VAR>", "limits:<svc>/<cpu|memory>",
                 "replicas:<svc>", "flag:<name>", "secret:<name>", "probe:<svc>/<kind>", "node:<name>",
                 "network:<svc>", "pod:<svc>", *CATEGORIES):
        assert form in description


def test_reads_answer_compactly_with_pages_and_explicit_truncation(recorded):
    session, client, _ = recorded
    workloads = session.backend.workloads()
    deployments = client.call("get_resources", kind="deployments", limit=5)
    assert deployments["total"] == len(workloads) and len(deployments["items"]) == 5
    assert deployments["next_offset"] == 5
    assert {item["name"] for item in deployments["items"]} <= set(workloads)
    full = client.call("get_resources", kind="deployments", name="cartservice")
    assert full["object"]["metadata"]["name"] == "cartservice"

    metrics = client.call("query_metrics", query="kube_deployment_spec_replicas", max_series=2)
    assert metrics["resultType"] == "vector" and len(metrics["result"]) == 2
    assert "series cut" in metrics["truncated"]
    ranged = client.call("query_metrics", query="sum(kube_deployment_spec_replicas)", start=-280, step=15)
    assert ranged["resultType"] == "matrix" and len(ranged["result"][0]["values"]) > 5
    unsupported = client.call("query_metrics", query="sum(foo")
    assert unsupported["verdict"] == "error" and "PromQL" in unsupported["error"]

    files = client.call("get_source", service="cartservice")["files"]
    text = client.call("get_source", service="cartservice", path=files[0]["path"], limit=3)
    assert len(text["text"].splitlines()) <= 3 and text["total_lines"] == files[0]["lines"]
    history = client.call("get_rollout_history", service="cartservice")
    assert history["revisions"]
    assert "error" not in client.call("get_topology")
    logs = client.call("get_logs", service="frontend", limit=3)
    assert len(logs["lines"]) <= 3
    traces = client.call("get_traces", limit=2)["traces"]
    if traces:
        trace_id = traces[0]["trace_id"]
        assert client.call("get_trace", trace_id=trace_id).get("spans")
    assert "events" in client.call("get_events", limit=5)


def test_a_mutation_must_cite_a_reported_incident_and_is_recorded_as_an_intervention(recorded):
    session, client, records = recorded
    uncited = client.call("restart_service", incident_id="inc-1", service="cartservice")
    assert uncited["verdict"] == "refused" and "report_incidents" in uncited["error"]

    reported = client.call(
        "report_incidents",
        incidents=[{"incident_id": "inc-1", "alert_ids": [], "status": "open",
                    "root_cause": {"culprits": ["cartservice"], "artifact": "pod:cartservice",
                                   "category": "infrastructure", "text": "pods wedged"}}],
    )
    assert reported["incidents"][0]["status"] == "open"
    done = client.call("restart_service", incident_id="inc-1", service="cartservice")
    assert done["ok"] is True and done["target"] == "cartservice"

    streams = [stream for stream, _ in records]
    assert streams.count("tool_calls") == 3 and streams.count("reports") == 1
    intervention = next(rec for stream, rec in records if stream == "interventions")
    assert intervention["tool"] == "restart_service" and intervention["incident_id"] == "inc-1"
    assert intervention["invocation"] == 1 and intervention["t"] == session.backend.now
    verdicts = [rec["verdict"] for stream, rec in records if stream == "tool_calls"]
    assert verdicts == ["refused", "ok", "ok"]
    assert session.end_invocation() == {"calls": 3, "reads": 0, "actions": 2, "reports": 1}


def test_the_mutation_cap_refuses_further_changes_until_the_next_invocation(recorded):
    session, client, _ = recorded
    client.call("report_incidents", incidents=[{"incident_id": "i", "alert_ids": []}])
    # each call a real change: scaling to the current count would be a no-op, which the cap ignores
    answers = [client.call("scale_service", incident_id="i", service="adservice", replicas=n) for n in (2, 3, 4, 5)]
    assert [a.get("verdict", "ok") for a in answers] == ["ok", "ok", "ok", "refused"]
    session.begin_invocation(2, session.backend.now)
    assert client.call("scale_service", incident_id="i", service="adservice", replicas=1)["ok"] is True


def test_bad_arguments_get_a_clear_error_and_change_nothing(recorded):
    session, client, _ = recorded
    before = session.backend.resources("deployments")
    client.call("report_incidents", incidents=[{"incident_id": "i"}])
    cases = [
        (("scale_service",), {"incident_id": "i", "service": "cartservice", "replicas": "three"}, "replicas"),
        (("scale_service",), {"incident_id": "i", "service": "cartservic", "replicas": 2}, "unknown service"),
        (("update_config",), {"incident_id": "i", "service": "cartservice", "resources": {"cpu": "lots"}}, "cpu"),
        (("rollback_service",), {"incident_id": "i", "service": "cartservice", "bogus": 1}, "bogus"),
        (("report_incidents",), {"incidents": [{"incident_id": "j", "alert_ids": ["nope"]}]}, "unknown alert ids"),
        (("report_incidents",), {"incidents": [{"incident_id": "j", "root_cause": {"artifact": "the cart"}}]}, "vocabulary"),
        (("no_such_tool",), {}, "unknown tool"),
    ]
    for (name,), args, phrase in cases:
        answer = client.call(name, **args)
        assert answer["verdict"] == "error", (name, args, answer)
        assert phrase in answer["error"], answer["error"]
        assert "Traceback" not in answer["error"]
    assert session.backend.resources("deployments") == before
    assert [i["incident_id"] for i in session.incidents()] == ["i"]


def test_source_repair_proposes_builds_and_submits_a_patch(recorded):
    session, client, records = recorded
    client.call("report_incidents", incidents=[{"incident_id": "i"}])
    path = "service.py"
    original = client.call("get_source", service="shippingservice", path=path, limit=2000)["text"] + "\n"
    patched = original.replace("\n", "\n# repaired by the agent\n", 1)
    diff = "".join(difflib.unified_diff(original.splitlines(True), patched.splitlines(True),
                                        f"a/{path}", f"b/{path}"))
    malformed = client.call("propose_patch", incident_id="i", service="shippingservice", diff="not a diff")
    assert malformed["verdict"] == "error" and "unified diff" in malformed["error"]
    proposed = client.call("propose_patch", incident_id="i", service="shippingservice", diff=diff)
    assert proposed["files_changed"] == [path]
    built = client.call("build_service_image", incident_id="i", service="shippingservice")
    assert built["ok"] is True, built
    revisions = len(client.call("get_rollout_history", service="shippingservice")["revisions"])
    submitted = client.call("submit_patch", incident_id="i", service="shippingservice")
    assert submitted["ok"] is True
    session.backend.advance_to(session.backend.now + 60)
    assert len(client.call("get_rollout_history", service="shippingservice")["revisions"]) == revisions + 1
    intervention = [rec for stream, rec in records if stream == "interventions"]
    assert [rec["tool"] for rec in intervention] == ["submit_patch"]
    assert intervention[0]["params"] == {"image": built["image"]}


def test_the_interface_has_no_import_path_to_ground_truth():
    import ast
    from pathlib import Path

    import pytest_marathon.interface as interface

    for source in Path(interface.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not [n for n in names if n.startswith("pytest_marathon.faults")], source.name


def test_log_and_event_pages_go_back_in_time_without_gaps_or_overlaps(recorded):
    _, client, _ = recorded
    for tool, key in (("get_logs", "lines"), ("get_events", "events")):
        whole = client.call(tool, since=-300, limit=150)
        pages, offset = [], 0
        while offset is not None and len(pages) < 3:
            answer = client.call(tool, since=-300, limit=50, offset=offset)
            pages.append(answer[key])
            offset = answer["next_offset"]
        stitched = [item for page in reversed(pages) for item in page]
        assert stitched == whole[key][-len(stitched):], tool
        times = [item["t"] for item in stitched]
        assert times == sorted(times), tool  # oldest first within and across pages
    newest = client.call("get_logs", limit=1)["lines"]
    assert newest and newest[0]["t"] <= client.call("get_alerts")["now"]


def test_an_unknown_feature_flag_is_rejected_and_a_known_one_is_set(recorded):
    session, client, records = recorded
    # upstream Online Boutique ships no flags configmap: the operator creates one first
    for name in ("adsEnabled", "recommendationsEnabled"):
        session.backend.set_feature_flag(name, "true")
    client.call("report_incidents", incidents=[{"incident_id": "i"}])
    flags = client.call("get_resources", kind="configmaps", name="feature-flags")["object"]["data"]
    typo = client.call("set_feature_flag", incident_id="i", name="adsEnabld", value="false")
    assert typo["verdict"] == "error" and "adsEnabled" in typo["error"]
    assert client.call("get_resources", kind="configmaps", name="feature-flags")["object"]["data"] == flags
    done = client.call("set_feature_flag", incident_id="i", name="adsEnabled", value="false")
    assert done["ok"] is True and done["target"] is None
    assert client.call("get_resources", kind="configmaps", name="feature-flags")["object"]["data"]["adsEnabled"] == "false"
    intervention = [rec for stream, rec in records if stream == "interventions"]
    assert [(r["tool"], r["params"]) for r in intervention] == [("set_feature_flag", {"name": "adsEnabled", "value": "false"})]


def test_alerts_that_fired_are_listed_and_can_be_grouped_into_an_incident():
    backend, engine = warmed_up("boutique", 6)
    backend.chaos_start("credential_rotation", "redis-cart", new_password="rotated")
    t = backend.now
    while t < 180:
        t += backend.tick_seconds
        backend.advance_to(t)
        if t % 15 == 0:
            engine.evaluate(t)
    client = InProcessClient(ToolSession(backend, alerts=engine.history))
    alerts = client.call("get_alerts", state="firing", limit=200)
    assert alerts["total"] == len(alerts["alerts"]) > 0
    ids = [a["alert_id"] for a in alerts["alerts"]]
    assert all(isinstance(i, str) and i != "None" for i in ids)
    cart = client.call("get_alerts", labels={"service": "cartservice"}, limit=200)["alerts"]
    assert all(a["labels"]["service"] == "cartservice" for a in cart)
    reported = client.call("report_incidents", incidents=[{
        "incident_id": "cart-auth", "alert_ids": ids, "status": "open",
        "root_cause": {"culprits": ["redis-cart"], "artifact": "secret:redis-cart", "category": "authentication"}}])
    assert reported["incidents"][0]["alert_ids"] == sorted(set(ids))


def test_every_remedy_in_the_fault_catalog_is_a_call_the_published_schemas_accept():
    import jsonschema

    from pytest_marathon.faults import load_catalog

    schemas = {spec.name: spec.input_schema for spec in TOOLS}
    steps = [step for entry in load_catalog("boutique").entries for step in entry.remedy or ()]
    assert steps
    for step in steps:
        jsonschema.validate({"incident_id": "inc-1", **step["args"]}, schemas[step["tool"]])


def test_update_config_sets_limits_and_requests_by_their_kubernetes_keys(recorded):
    session, client, records = recorded
    client.call("report_incidents", incidents=[{"incident_id": "i"}])
    done = client.call("update_config", incident_id="i", service="checkoutservice",
                       resources={"limits.cpu": "3", "requests.memory": "96Mi"})
    assert done["ok"] is True, done
    session.backend.advance_to(session.backend.now + 60)
    container = client.call("get_resources", kind="deployments", name="checkoutservice")["object"]["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["cpu"] == "3"
    assert container["resources"]["requests"]["memory"] == "96Mi"
    assert [r["params"] for s, r in records if s == "interventions"] == [{"resources": {"limits.cpu": "3", "requests.memory": "96Mi"}}]
    empty = client.call("update_config", incident_id="i", service="checkoutservice", resources={})
    assert empty["verdict"] == "error"
