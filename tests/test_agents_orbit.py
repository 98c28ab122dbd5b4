"""Orbit (paper, Appendix G) with the scripted model double as its model.

Whole runs go through `run_marathon` and the run's metering proxy (the double is the user's
OpenAI upstream); the tests of one invocation at a time drive Orbit by hand on a live twin whose
frontend a bad config release broke (`test_agents_live.World`), with the double reached directly.
The script (`model_double/orbit_script.py`) reads, reports a root cause, rolls back and finishes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from model_double import ModelDouble
from model_double.conversation import Conversation
from model_double.orbit_script import OrbitScript
from model_double.script import Turn
from pytest_marathon.agents import InvocationContext, resolve_agent
from test_agents_live import DELTA, World, fresh_world, world  # noqa: F401 - the live-twin fixture

from pytest_marathon.cli import main
from pytest_marathon.config import RunConfig
from pytest_marathon.interface import InProcessClient
from pytest_marathon.metering import MeteringProxy, load_price_table
from pytest_marathon.metering.credentials import Upstream
from pytest_marathon.runner import run_marathon

TINY = str(Path(__file__).parent / "scenarios" / "tiny-2.yaml")  # six invocations, two faults
GPT41_MINI = (0.40, 1.60)  # USD per million input / output tokens, built-in table (default model)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _doc(body: dict[str, Any]) -> dict[str, Any] | None:
    """Orbit's state document in a request of its loop (None for a subagent request)."""
    if body.get("tools"):
        return None
    return json.loads(next(m["content"] for m in body["messages"] if m["role"] == "user"))


@pytest.fixture
def user_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("MARATHON_MODEL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-user")
    yield


def _run(double: ModelDouble, out: Path, monkeypatch: pytest.MonkeyPatch, *, score: bool = False,
         scenario: str = "short-5", **overrides: Any) -> Any:
    monkeypatch.setenv("OPENAI_BASE_URL", double.openai_base_url)
    config = RunConfig(app="boutique", agent="orbit", seed=1, scenario=scenario, out_dir=out, **overrides)
    return run_marathon(config, baseline_cache=None, score=score)


class WatchingScript:
    """The Orbit script, plus a look at the bundle as it stands when each invocation first asks
    the model: what has been reported in that invocation, and which alerts fire by then."""

    def __init__(self, out: Path) -> None:
        self.script = OrbitScript()
        self.out = out
        self.seen: list[dict[str, Any]] = []

    def __call__(self, conv: Conversation) -> Turn:
        if not conv.tools and len(conv.user_texts) == 1:
            doc = json.loads(conv.user_texts[0])
            if doc["budget"]["step"] == 1:
                self.seen.append(self._look(doc["wake_up"]["invocation"], doc["wake_up"]["virtual_time_s"]))
        return self.script(conv)

    def _look(self, n: int, t: float) -> dict[str, Any]:
        (bundle,) = self.out.iterdir()
        calls = [c for c in _lines(bundle / "tool_calls.jsonl") if c["invocation"] == n]
        reported = {a for r in _lines(bundle / "reports.jsonl") if r["invocation"] == n for a in r["alert_ids"]}
        last: dict[str, str] = {}
        for event in _lines(bundle / "alerts.jsonl"):
            if event["t"] <= t:
                last[event["alert_id"]] = event["event"]
        firing = {a for a, e in last.items() if e == "firing"}
        return {"n": n, "tools": [c["tool"] for c in calls], "reported": reported, "firing": firing}


def test_orbit_completes_short5_reports_repairs_and_is_metered_by_the_proxy(
    user_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watch = WatchingScript(tmp_path / "bundles")
    with ModelDouble(script=watch) as double:
        result = _run(double, tmp_path / "bundles", monkeypatch, score=True)
        exchanges = double.model_exchanges()
    records = _lines(result.bundle / "invocations.jsonl")
    assert records and {r["status"] for r in records} == {"ok"}
    assert result.metrics["correlated"] > 0 and result.metrics["repaired"] > 0
    interventions = _lines(result.bundle / "interventions.jsonl")
    assert any(i["tool"] == "rollback_service" and i["ok"] for i in interventions)
    # the complete mapping went out before the model was asked, in every invocation that asked it
    assert watch.seen
    for seen in watch.seen:
        assert "report_incidents" in seen["tools"], seen["n"]
        assert seen["firing"] <= seen["reported"], seen["n"]
    # tokens and dollars per invocation are what the proxy measured of the double's answers
    per_invocation: dict[int, list[tuple[int, int]]] = {}
    for exchange in exchanges:
        doc = _doc(exchange.body)
        assert doc is not None
        per_invocation.setdefault(doc["wake_up"]["invocation"], []).append(exchange.usage)
    assert per_invocation
    for record in records:
        usages = per_invocation.get(record["n"], [])
        assert record["usage_source"] == "proxy"
        assert record["model_calls"] == len(usages)
        assert record["input_tokens"] == sum(u[0] for u in usages)
        assert record["output_tokens"] == sum(u[1] for u in usages)
        cost = sum(i * GPT41_MINI[0] + o * GPT41_MINI[1] for i, o in usages) / 1e6
        assert record["cost_usd"] == pytest.approx(cost, abs=1e-6)


def test_two_runs_with_the_same_answers_have_the_same_content_digest(
    user_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    digests = []
    for name in ("first", "second"):
        with ModelDouble(script=OrbitScript()) as double:
            result = _run(double, tmp_path / name, monkeypatch, scenario=TINY)
            assert double.model_exchanges()
        digests.append(json.loads((result.bundle / "manifest.json").read_text())["content_digest"])
    assert digests[0] == digests[1]


def test_with_no_budget_orbit_does_triage_only_and_the_run_completes(
    user_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proxy's /budget says nothing is left: no model call is made, the mapping and the
    tentative root causes still go out."""
    with ModelDouble(script=OrbitScript()) as double:
        result = _run(double, tmp_path / "zero", monkeypatch, scenario=TINY, max_cost_usd=0.0)
        assert double.model_exchanges() == []
    records = _lines(result.bundle / "invocations.jsonl")
    assert {r["status"] for r in records} == {"ok"}
    assert all("rung triage" in r["detail"] for r in records)
    reports = _lines(result.bundle / "reports.jsonl")
    assert reports and all(r["root_cause"]["text"].startswith("tentative") for r in reports)


def test_a_refused_call_moves_orbit_to_triage_for_the_rest_of_the_run(
    user_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A budget spent by the first call: the next is refused, and Orbit never asks again."""
    with ModelDouble(script=OrbitScript()) as double:
        result = _run(double, tmp_path / "tiny", monkeypatch, scenario=TINY, max_cost_usd=1e-9)
        assert len(double.model_exchanges()) == 1
    records = _lines(result.bundle / "invocations.jsonl")
    assert {r["status"] for r in records} == {"ok"}
    assert sum(r["refused_calls"] for r in records) == 1
    refused = next(i for i, r in enumerate(records) if r["refused_calls"])
    assert "budget spent (a model call was refused)" in records[refused]["detail"]
    assert all("rung triage" in r["detail"] for r in records[refused + 1 :])
    assert _lines(result.bundle / "reports.jsonl")


# --- one invocation at a time, on a live twin ----------------------------------------------------


class DiesAfter:
    """A tools client whose process dies (SystemExit) right after `tool` has run in the system:
    the action happened, its answer never reached the agent."""

    def __init__(self, client: InProcessClient, tool: str) -> None:
        self.client, self.tool = client, tool

    def call(self, tool: str, /, **args: Any) -> dict[str, Any]:
        answer = self.client.call(tool, **args)
        if tool == self.tool:
            raise SystemExit("killed mid-action")
        return answer

    def list_tools(self) -> list[dict[str, Any]]:
        return self.client.list_tools()


def _invoke(
    live: World, workspace: Path, double: ModelDouble, dies_after: str | None = None,
    base_urls: dict[str, str] | None = None,
) -> Any:
    live.n += 1
    t = live.n * DELTA
    live.advance(t)
    live.session.begin_invocation(live.n, t)
    client = InProcessClient(live.session)
    ctx = InvocationContext(
        n=live.n, t=t, alerts=live.engine.history(),
        tools=DiesAfter(client, dies_after) if dies_after else client,
        workspace=workspace, budget_s=110.0, deadline=time.monotonic() + 110.0,
        model_base_urls=base_urls or {"openai": double.openai_base_url},
    )
    try:
        return resolve_agent("orbit").invoke(ctx)
    finally:
        live.session.end_invocation()


def _requests_of(double: ModelDouble, n: int) -> list[dict[str, Any]]:
    return [e.body for e in double.model_exchanges() if (_doc(e.body) or {}).get("wake_up", {}).get("invocation") == n]


def test_a_malformed_decision_gets_exactly_one_correction_call(world: World, tmp_path: Path) -> None:  # noqa: F811
    script = OrbitScript(malformed="once", malformed_step=2)
    with ModelDouble(script=script) as double:
        usage = _invoke(world, tmp_path, double)
        bodies = _requests_of(double, 1)
    steps = [_doc(b)["budget"]["step"] for b in bodies]
    assert steps.count(2) == 2 and all(steps.count(s) == 1 for s in set(steps) - {2})
    correction = next(b for b in bodies if _doc(b)["budget"]["step"] == 2 and len(b["messages"]) > 2)
    assert "not a valid decision" in correction["messages"][-1]["content"]
    assert "finished" in usage.detail
    assert [(i["tool"], i["target"]) for i in world.stream("interventions")] == [("rollback_service", "frontend")]


def test_a_second_malformed_decision_ends_the_invocation_as_a_no_op(world: World, tmp_path: Path) -> None:  # noqa: F811
    script = OrbitScript(malformed="twice", malformed_step=2)
    with ModelDouble(script=script) as double:
        usage = _invoke(world, tmp_path, double)
        bodies = _requests_of(double, 1)
    assert [_doc(b)["budget"]["step"] for b in bodies] == [1, 2, 2]
    assert "no-op: malformed decision twice at step 2" in usage.detail
    assert world.stream("interventions") == []
    # the step-2 report of the script never ran: only the code's tentative root causes went out
    assert all(r["root_cause"]["text"].startswith("tentative") for r in world.stream("reports"))


def test_an_action_that_ran_while_the_process_died_is_folded_back_first(world: World, tmp_path: Path) -> None:  # noqa: F811
    with ModelDouble(script=OrbitScript()) as double:
        with pytest.raises(SystemExit):
            _invoke(world, tmp_path, double, dies_after="rollback_service")
        ledger = _lines(tmp_path / "orbit" / "ledger.jsonl")
        (intent,) = [e for e in ledger if e.get("tool") == "rollback_service"]
        assert not [e for e in ledger if e["action_id"] == intent["action_id"] and e["event"] != "intent"]
        usage = _invoke(world, tmp_path, double)
    ledger = _lines(tmp_path / "orbit" / "ledger.jsonl")
    (recovered,) = [e for e in ledger if e["event"] == "recovered"]
    assert recovered["applied"] is True and recovered["n"] == 2
    assert "1 actions recovered" in usage.detail
    incidents = json.loads((tmp_path / "orbit" / "incidents.json").read_text())["incidents"]
    (frontend,) = [i for i in incidents if i["workload"] == "frontend"]
    assert [(a["tool"], a["ok"], a.get("recovered")) for a in frontend["actions"]] == [("rollback_service", True, True)]
    # the recovered repair counts as done: it is not run a second time
    assert [i["tool"] for i in world.stream("interventions")] == ["rollback_service"]
    assert frontend["incident_id"] in world.final_incidents()


def test_source_fixes_run_only_in_a_subagent_bound_to_the_diagnosed_service(world: World, tmp_path: Path) -> None:  # noqa: F811
    with ModelDouble(script=OrbitScript(source_fix=True)) as double:
        _invoke(world, tmp_path, double)
        loop = [e for e in double.model_exchanges() if _doc(e.body) is not None]
        sub = [e for e in double.model_exchanges() if _doc(e.body) is None]
    offered = {entry["name"] for e in loop for entry in _doc(e.body)["tool_catalog"]}
    assert "source_fix" in offered and not offered & {"propose_patch", "build_service_image", "submit_patch"}
    assert sub and all(e.tools == ["build_service_image", "get_source", "propose_patch", "submit_patch"] for e in sub)
    for exchange in sub:
        for tool in exchange.body["tools"]:
            assert "service" not in tool["function"]["parameters"].get("properties", {})
    source_reads = [c for s, c in world.records if s == "tool_calls" and c["tool"] == "get_source"]
    assert [c["args"]["service"] for c in source_reads] == ["frontend"]


def test_orbit_is_listed_with_what_it_needs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agents"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("orbit"))
    assert "MARATHON_MODEL" in line and "OPENAI_API_KEY" in line
    assert resolve_agent("orbit").uses_models is True


def test_a_recipe_is_promoted_only_once_its_incident_validated_green(world: World, tmp_path: Path) -> None:  # noqa: F811
    with ModelDouble(script=OrbitScript()) as double:
        _invoke(world, tmp_path, double)
        assert [i["tool"] for i in world.stream("interventions")] == ["rollback_service"]
        assert not (tmp_path / "orbit" / "recipes.json").exists()  # repaired, not yet green
        for _ in range(6):
            _invoke(world, tmp_path, double)
    incidents = json.loads((tmp_path / "orbit" / "incidents.json").read_text())["incidents"]
    (frontend,) = [i for i in incidents if i["workload"] == "frontend"]
    assert frontend["closed"] and frontend["green"] and frontend["status"] == "resolved"
    assert world.final_incidents()[frontend["incident_id"]]["status"] == "resolved"
    (recipe,) = json.loads((tmp_path / "orbit" / "recipes.json").read_text())["recipes"]
    assert recipe["tool"] == "rollback_service" and recipe["arguments"] == {"service": "frontend"}
    assert recipe["from_incident"] == frontend["incident_id"]
    lessons = json.loads((tmp_path / "orbit" / "lessons.json").read_text())["lessons"]
    assert lessons == ["(invocation 1) a rollback is the first repair to try on frontend"]


def test_an_invocation_that_outlived_its_budget_never_overwrites_a_later_ones_state(
    world: World, tmp_path: Path  # noqa: F811
) -> None:
    with ModelDouble(script=OrbitScript()) as double:
        _invoke(world, tmp_path, double)
        _invoke(world, tmp_path, double)
        checkpoint = (tmp_path / "orbit" / "checkpoint.json").read_text()
        world.n = 0  # the first invocation again, as a late thread of it would be
        usage = _invoke(world, tmp_path, double)
    assert "stale" in usage.detail
    assert (tmp_path / "orbit" / "checkpoint.json").read_text() == checkpoint


def _metered(workspace: Path, max_cost: float | None, invocations: int) -> tuple[list[str], float, list[dict]]:
    """Orbit on a fresh twin through a real metering proxy with this budget: the invocations'
    details, the dollars spent and the state documents the model received."""
    live = fresh_world()
    with ModelDouble(script=OrbitScript()) as double:
        upstreams = {"openai": Upstream(double.openai_base_url, {}),
                     "anthropic": Upstream(double.anthropic_base_url, {})}
        with MeteringProxy(load_price_table(), max_cost, upstreams) as proxy:
            details = []
            for n in range(1, invocations + 1):
                proxy.begin_invocation(n)
                details.append(_invoke(live, workspace, double, base_urls=proxy.base_urls).detail)
                proxy.end_invocation()
            docs = [d for d in (_doc(e.body) for e in double.model_exchanges()) if d is not None]
            return details, proxy.spent_usd, docs


@pytest.mark.parametrize(("share_left", "rung"), [(0.3, "lean"), (0.1, "read-only")])
def test_the_budget_ladder_steps_down_as_the_runs_budget_runs_low(tmp_path: Path, share_left: float, rung: str) -> None:
    """The first invocation spends the same on an identical twin; a budget that leaves
    `share_left` after it puts the second on the lower rung the proxy's /budget implies."""
    _, first, _ = _metered(tmp_path / "reference", None, 1)
    assert first > 0
    details, _, docs = _metered(tmp_path / "budgeted", first / (1 - share_left), 2)
    assert details[0].startswith("orbit: rung full;") and details[1].startswith(f"orbit: rung {rung};")
    later = [d for d in docs if d["wake_up"]["invocation"] == 2]
    assert later, "the second invocation asked the model"
    # what the proxy said was left when the second invocation began (the budgeted run's prompts
    # carry the budget's numbers, so they are a few tokens longer than the reference's)
    assert later[0]["budget"]["left_usd"] == pytest.approx(first * share_left / (1 - share_left), rel=0.02)
    for doc in later:
        offered = {entry["name"] for entry in doc["tool_catalog"]}
        assert doc["budget"]["rung"] == rung and "source_fix" not in offered
        if rung == "read-only":
            assert not offered & {"rollback_service", "restart_service", "scale_service", "update_config"}


def test_an_unreachable_model_is_an_error_after_the_triage_went_out(world: World, tmp_path: Path) -> None:  # noqa: F811
    with ModelDouble(script=OrbitScript()) as double:
        closed = double.openai_base_url
    usage = _invoke(world, tmp_path, double, base_urls={"openai": closed})
    assert usage.status == "error" and "model unavailable" in usage.detail
    reports = world.stream("reports")
    assert reports and {a for r in reports for a in r["alert_ids"]} == {a["alert_id"] for a in world.engine.history()}


def test_the_subagent_reverts_a_bad_code_release_of_the_service_it_is_bound_to(tmp_path: Path) -> None:
    """A code release of cartservice makes the frontend's calls to it fail: the loop blames
    cartservice, and the subagent undoes the release's diff, builds and submits it."""
    live = fresh_world(break_frontend=False)
    patch = (Path(__file__).parent.parent / "fault_catalog" / "boutique" / "patches" / "code-cart-unit-cap.diff")
    live.backend.release("cartservice", patch=patch.read_text(), change_cause="cap cart units")
    script = OrbitScript(source_fix=True, culprit="cartservice", undo_revisions=(1, 2))
    with ModelDouble(script=script) as double:
        for _ in range(3):  # the frontend's alert on its calls to cartservice takes a while to fire
            _invoke(live, tmp_path, double)
    calls = [(c["tool"], c["args"].get("service"), c["verdict"]) for s, c in live.records if s == "tool_calls"]
    source = [c for c in calls if c[0] in {"get_source", "propose_patch", "build_service_image", "submit_patch"}]
    assert source == [("get_source", "cartservice", "ok"), ("propose_patch", "cartservice", "ok"),
                      ("build_service_image", "cartservice", "ok"), ("submit_patch", "cartservice", "ok")]
    live.session.begin_invocation(live.n + 1, live.n * DELTA)
    deployed = InProcessClient(live.session).call("get_source", service="cartservice", path="service.py")
    live.session.end_invocation()
    assert "CART_FIELD" in json.dumps(deployed) and "MAX_CART_UNITS" not in json.dumps(deployed)
    ledger = _lines(tmp_path / "orbit" / "ledger.jsonl")
    assert [e["tool"] for e in ledger if e["event"] == "intent"] == ["propose_patch", "build_service_image", "submit_patch"]
