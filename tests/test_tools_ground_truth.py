"""No tool answer carries ground truth: catalog ids, patch file names, or words that say a change
was planted — checked on a twin with faults of the short scenario injected."""

from __future__ import annotations

import json
import re

from pytest_marathon.faults import Orchestrator, load_catalog, load_scenario, schedule_for
from pytest_marathon.faults.catalog import catalog_root
from pytest_marathon.interface import InProcessClient, ToolSession
from pytest_marathon.interface.standalone import warmed_up

GIVEAWAY = re.compile(r"\b(faults?|faulty|inject\w*|chaos\w*|marathon)\b", re.IGNORECASE)


def _answers(client: InProcessClient, backend) -> list[dict]:
    answers = [
        client.call("get_alerts", limit=200),
        client.call("get_topology"),
        client.call("get_events", limit=200, since=-300),
        client.call("get_logs", limit=200, since=-300),
        client.call("get_logs", limit=200, level="error", since=-300),
        client.call("get_traces", limit=50, errors_only=True, since=-300),
        client.call("query_metrics", query="sum by (service, level) (log_lines_total)"),
    ]
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
    return answers


def test_tool_answers_never_reveal_the_schedule_or_the_catalog():
    catalog = load_catalog("boutique")
    schedule = schedule_for("boutique", load_scenario("short-5"), 2, catalog)
    backend, engine = warmed_up("boutique", 2)
    orchestrator = Orchestrator(backend, schedule)
    t = float(backend.now)
    last_inject = max(f.inject_at for f in schedule.faults)
    while t < last_inject + 60:
        t = round(t + backend.tick_seconds, 6)
        orchestrator.step(t)
        backend.advance_to(t)
        if t % 15 == 0:
            engine.evaluate(t)
    client = InProcessClient(ToolSession(backend, alerts=engine.history))
    text = json.dumps(_answers(client, backend))
    for entry in catalog.entries:
        assert entry.id not in text, entry.id
    patches = catalog_root("boutique") / "patches"
    for patch in patches.iterdir() if patches.is_dir() else []:
        assert patch.name not in text and patch.name.rsplit(".", 1)[0] not in text, patch.name
    assert not GIVEAWAY.search(text), GIVEAWAY.search(text).group(0)
