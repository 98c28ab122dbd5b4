"""System changes that would change nothing, and what each change acts on, through the tools.

A no-op (scale to the current count, rollback to the running template, values already in place,
the flag's own value, the running image) answers `changed: false`, leaves the backend as it was,
is recorded with `changed: false` and does not use the mutation cap; any real difference, even
one env var of several, is a change. `targets` names the workloads a change acts on; for a
feature flag, the services whose deployed code reads it.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

import pytest

from pytest_marathon.backends import create_backend
from pytest_marathon.interface import InProcessClient, PolicyConfig, ToolSession

Records = list[tuple[str, dict[str, Any]]]


@pytest.fixture
def world():
    """A twin at the start of its warm-up, a session whose cap is one change per invocation."""
    backend = create_backend("boutique", 21)
    records: Records = []
    session = ToolSession(backend, alerts=lambda: [], sink=lambda s, r: records.append((s, r)),
                          policy=PolicyConfig(mutation_cap=1))
    session.begin_invocation(1, backend.now)
    client = InProcessClient(session)
    client.call("report_incidents", incidents=[{"incident_id": "i"}])
    # upstream Online Boutique ships no flags configmap: the operator creates one with two flags
    for name in ("adsEnabled", "recommendationsEnabled"):
        backend.set_feature_flag(name, "true")
    return backend, session, client, records


def _snapshot(backend: Any) -> str:
    """Everything a no-op must leave alone: deployments, ReplicaSets, rollout histories,
    configmaps, pods and the event log."""
    return json.dumps(
        [backend.resources("deployments"), backend.resources("replicasets"),
         [backend.rollout_history(w) for w in backend.workloads()], backend.resources("configmaps"),
         backend.resources("pods"), backend.events(limit=10_000)],
        sort_keys=True, default=str,
    )


def _interventions(records: Records) -> list[dict[str, Any]]:
    return [r for s, r in records if s == "interventions"]


def _container(backend: Any, service: str) -> dict[str, Any]:
    return backend.resources("deployments", service)[0]["spec"]["template"]["spec"]["containers"][0]


def _diff(path: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))


def _assert_no_op(world, tool: str, args: dict[str, Any], phrase: str) -> dict[str, Any]:
    """Call a no-op three times on a cap of one; then a real change still gets through."""
    backend, session, client, records = world
    before = _snapshot(backend)
    for _ in range(3):
        answer = client.call(tool, incident_id="i", **args)
        assert answer["ok"] is True and answer["changed"] is False, answer
        assert phrase in answer["message"] and "nothing changed" in answer["message"], answer["message"]
        assert answer["completes_at"] is None
    assert _snapshot(backend) == before
    record = _interventions(records)[-1]
    assert record["tool"] == tool and record["ok"] is True and record["changed"] is False
    assert record["completed_at"] is None and record["incident_id"] == "i"
    assert [r["verdict"] for s, r in records if s == "tool_calls"][-3:] == ["ok", "ok", "ok"]
    real = client.call("restart_service", incident_id="i", service="emailservice")
    assert real["ok"] is True and real["changed"] is True, real  # the cap was not used
    assert client.call("restart_service", incident_id="i", service="emailservice")["verdict"] == "refused"
    at_cap = client.call(tool, incident_id="i", **args)  # a no-op is no system change: never refused
    assert at_cap["ok"] is True and at_cap["changed"] is False, at_cap
    return record


def test_scaling_to_the_current_count_is_a_no_op(world):
    backend = world[0]
    replicas = backend.resources("deployments", "adservice")[0]["spec"]["replicas"]
    record = _assert_no_op(world, "scale_service", {"service": "adservice", "replicas": replicas},
                           f"replicas already {replicas}")
    assert record["params"] == {"replicas": replicas}
    assert record["target"] == "adservice" and record["targets"] == ["adservice"]


def test_a_rollback_to_the_running_template_is_skipped_as_kubectl_skips_it(world):
    backend, session, client, _ = world
    changed = client.call("update_config", incident_id="i", service="adservice", env={"LOG_LEVEL": "debug"})
    assert changed["changed"] is True
    session.begin_invocation(2, backend.now)
    back = client.call("rollback_service", incident_id="i", service="adservice")  # to revision 1
    assert back["changed"] is True and back["revision"] == 3
    session.begin_invocation(3, backend.now)
    # revision 3 runs revision 1's template: rolling back to either is a no-op
    _assert_no_op(world, "rollback_service", {"service": "adservice", "to_revision": 3},
                  "already matches revision 3")
    session.begin_invocation(4, backend.now)
    assert "LOG_LEVEL" not in {e["name"] for e in _container(backend, "adservice")["env"]}
    # the previous revision (2) has another template: a change, as is an unknown revision's error
    assert client.call("rollback_service", incident_id="i", service="adservice")["changed"] is True
    session.begin_invocation(5, backend.now)
    unknown = client.call("rollback_service", incident_id="i", service="adservice", to_revision=99)
    assert unknown["verdict"] == "error" and "99" in unknown["error"]


def test_update_config_with_every_value_in_place_is_a_no_op(world):
    backend = world[0]
    container = _container(backend, "currencyservice")
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    name, value = sorted(env.items())[0]
    limits = container["resources"]["limits"]
    args = {"service": "currencyservice", "env": {name: value, "NOT_SET_ANYWHERE": None},
            "resources": {"cpu": limits["cpu"], "limits.memory": limits["memory"]}}
    record = _assert_no_op(world, "update_config", args, "already has every value")
    assert record["params"] == {"env": args["env"], "resources": args["resources"]}


def test_a_partial_change_is_a_change_and_uses_the_cap(world):
    backend, session, client, records = world
    container = _container(backend, "currencyservice")
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    name, value = sorted(env.items())[0]
    revisions = len(backend.rollout_history("currencyservice"))
    answer = client.call("update_config", incident_id="i", service="currencyservice",
                         env={name: value, "LOG_LEVEL": "debug"})
    assert answer["ok"] is True and answer["changed"] is True, answer
    assert len(backend.rollout_history("currencyservice")) == revisions + 1
    assert _interventions(records)[-1]["changed"] is True
    again = client.call("update_config", incident_id="i", service="currencyservice",
                        resources={"cpu": "333m"})
    assert again["verdict"] == "refused"  # the partial change used the cap of one


def test_removing_a_variable_that_is_set_is_a_change(world):
    backend, _, client, _ = world
    names = sorted(e["name"] for e in _container(backend, "currencyservice")["env"] if "value" in e)
    answer = client.call("update_config", incident_id="i", service="currencyservice", env={names[-1]: None})
    assert answer["changed"] is True, answer
    assert names[-1] not in {e["name"] for e in _container(backend, "currencyservice")["env"]}


@pytest.mark.parametrize("resources", [{"requests.cpu": "250m"}, {"memory": "64Mi"}])
def test_one_resource_that_differs_is_a_change(world, resources):
    backend, _, client, _ = world
    current = _container(backend, "emailservice")["resources"]
    key = next(iter(resources))
    section, _, name = key.rpartition(".")
    assert current[section or "limits"][name] != resources[key]
    answer = client.call("update_config", incident_id="i", service="emailservice", resources=resources)
    assert answer["changed"] is True, answer


def test_a_literal_over_a_secret_reference_is_a_change(world):
    backend, _, client, _ = world
    refs = {e["name"]: e["valueFrom"] for e in _container(backend, "cartservice")["env"] if "valueFrom" in e}
    assert refs, "cartservice reads its redis password from a secret"
    name = sorted(refs)[0]
    answer = client.call("update_config", incident_id="i", service="cartservice", env={name: "a-literal"})
    assert answer["changed"] is True, answer


def test_setting_a_flag_to_its_value_is_a_no_op(world):
    backend = world[0]
    value = backend.resources("configmaps", "feature-flags")[0]["data"]["adsEnabled"]
    record = _assert_no_op(world, "set_feature_flag", {"name": "adsEnabled", "value": value},
                           f"already {value!r}")
    assert record["target"] is None and record["targets"] == []


def test_submitting_the_running_image_is_a_no_op(world):
    backend, session, client, records = world
    original = client.call("get_source", service="shippingservice", path="service.py", limit=2000)["text"] + "\n"
    diff = _diff("service.py", original, original.replace("\n", "\n# reviewed\n", 1))
    assert client.call("propose_patch", incident_id="i", service="shippingservice", diff=diff)["files_changed"]
    image = client.call("build_service_image", incident_id="i", service="shippingservice")["image"]
    first = client.call("submit_patch", incident_id="i", service="shippingservice")
    assert first["changed"] is True and _container(backend, "shippingservice")["image"] == image
    session.begin_invocation(2, backend.now)
    record = _assert_no_op(world, "submit_patch", {"service": "shippingservice"}, f"already runs {image}")
    assert record["params"] == {"image": image}


def test_a_restart_always_changes_state(world):
    backend, _, client, records = world
    revisions = len(backend.rollout_history("adservice"))
    answer = client.call("restart_service", incident_id="i", service="adservice")
    assert answer["changed"] is True and answer["targets"] == ["adservice"]
    assert len(backend.rollout_history("adservice")) == revisions + 1
    record = _interventions(records)[-1]
    assert record["changed"] is True and record["targets"] == ["adservice"] and record["completed_at"] is None


def test_a_no_op_still_needs_a_cited_incident(world):
    backend, _, client, records = world
    replicas = backend.resources("deployments", "adservice")[0]["spec"]["replicas"]
    answer = client.call("scale_service", incident_id="never-reported", service="adservice", replicas=replicas)
    assert answer["verdict"] == "refused"
    assert not _interventions(records)


def _release_flag_reader(backend: Any, service: str, flag: str) -> None:
    """Deliver code that reads `flag` through the fault API's release pipeline."""
    source = backend.source(service, path="service.py")["service.py"]
    lines = source.splitlines(True)
    at = next(i for i, line in enumerate(lines) if line.startswith("def ") and "(ctx" in line) + 1
    patched = "".join(lines[:at] + [f"    if ctx.flag({flag!r}, 'true') == 'off':\n        pass\n"] + lines[at:])
    assert backend.release(service, patch=_diff("service.py", source, patched), change_cause="flag reader").ok


def test_a_flag_change_targets_the_services_whose_code_reads_the_flag(world):
    backend, session, client, records = world
    assert backend.flag_readers("adsEnabled") == []  # upstream Online Boutique reads no flag
    _release_flag_reader(backend, "adservice", "adsEnabled")
    assert backend.flag_readers("adsEnabled") == ["adservice"]
    assert backend.flag_readers("recommendationsEnabled") == []
    answer = client.call("set_feature_flag", incident_id="i", name="adsEnabled", value="false")
    assert answer["changed"] is True and answer["target"] is None and answer["targets"] == ["adservice"]
    record = _interventions(records)[-1]
    assert record["target"] is None and record["targets"] == ["adservice"] and record["changed"] is True
    assert backend.artifact_value("flag:adsEnabled") == "false"


def test_flag_readers_follow_the_agents_own_patch_and_ignore_other_flags(world):
    backend, session, client, _ = world
    source = client.call("get_source", service="recommendationservice", path="service.py", limit=2000)["text"] + "\n"
    lines = source.splitlines(True)
    at = next(i for i, line in enumerate(lines) if line.startswith("def ") and "(ctx" in line) + 1
    reads = ("    name = 'adsEnabled'\n    ctx.flag(name)\n    ctx.flag(name='recommendationsEnabled')\n"
             "    ctx.env('adsEnabled')\n")
    diff = _diff("service.py", source, "".join(lines[:at] + [reads] + lines[at:]))
    assert client.call("propose_patch", incident_id="i", service="recommendationservice", diff=diff)["files_changed"]
    assert client.call("build_service_image", incident_id="i", service="recommendationservice")["ok"] is True
    assert client.call("submit_patch", incident_id="i", service="recommendationservice")["changed"] is True
    # a literal name is read, by position or keyword; a computed name and ctx.env are not
    assert backend.flag_readers("recommendationsEnabled") == ["recommendationservice"]
    assert backend.flag_readers("adsEnabled") == []
    session.begin_invocation(2, backend.now)
    flip = client.call("set_feature_flag", incident_id="i", name="recommendationsEnabled", value="false")
    assert flip["targets"] == ["recommendationservice"]


def test_only_a_real_change_waits_for_a_rollout_to_complete():
    """The runner's completion tracker watches the interventions stream: a no-op never rolled
    anything out, so it must never get a completion record (it would read as a change)."""
    from pytest_marathon.run.completions import CompletionTracker

    backend = create_backend("boutique", 22)
    tracker = CompletionTracker(backend)
    session = ToolSession(backend, alerts=lambda: [],
                          sink=lambda s, r: tracker.watch(r) if s == "interventions" else None)
    session.begin_invocation(1, backend.now)
    client = InProcessClient(session)
    client.call("report_incidents", incidents=[{"incident_id": "i"}])
    assert client.call("scale_service", incident_id="i", service="adservice", replicas=1)["changed"] is False
    assert client.call("scale_service", incident_id="i", service="cartservice", replicas=2)["changed"] is True
    done = []
    for _ in range(24):
        backend.advance_to(backend.now + backend.tick_seconds)
        done += tracker.completed(backend.now)
    assert [r["seq"] for r in done] == [3]  # the scale of cartservice, not the no-op (seq 2)
