"""Recording a run's model exchanges and replaying them: a replayed run is the recorded run, bit
for bit, with no upstream, no credentials and no network; a run that asks something else fails
with one line saying where it parted from the recording.

The upstream is the scripted model double; the agent (`agent_programs/model_agents.py`) acts on
what its model answers, in a Responses call and a streamed Chat Completions call per invocation,
so its tool calls, and with them the bundle's content digest, depend on both answers.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from model_double import Conversation, Exchange, ModelDouble, Text
from plugin_sessions import prepare_session

from pytest_marathon.bundle import read_bundle
from pytest_marathon.cli import main
from pytest_marathon.config import RunConfig
from pytest_marathon.isolation.probe import sandbox_support
from pytest_marathon.metering import MeteringProxy, load_price_table, upstreams_from_env
from pytest_marathon.metering.exchanges import model_exchanges
from pytest_marathon.metering.recording import RecordingError, read_recording
from pytest_marathon.runner import run_marathon

sys.path.insert(0, str(Path(__file__).parent / "agent_programs"))
from model_agents import AsksTheModel  # noqa: E402

pytest_plugins = ["pytester"]

AGENTS = Path(__file__).parent / "agent_programs"
SPEC = "model_agents:AsksTheModel"
MISMATCH = (
    "model replay: invocation 3, request 1 (POST openai/v1/responses) differs from the "
    "recording at $.input from character "
)
USAGE_FIELDS = ("model_calls", "input_tokens", "output_tokens", "cached_input_tokens", "cost_usd")


def answers(conv: Conversation) -> Text:
    """The model: names the first workload the question lists, and says why when asked."""
    asked = conv.user_texts[-1] if conv.user_texts else ""
    named = re.search(r"firing on: ([\w.-]+)", asked)
    if named is not None:
        return Text(named.group(1))
    why = re.search(r"Why ([\w.-]+)\?", asked)
    return Text(f"{why.group(1) if why else 'it'} fires the most alerts; its pods keep restarting.")


@pytest.fixture(scope="module")
def user_env() -> Iterator[pytest.MonkeyPatch]:
    """The user's environment for the module: the plug-in's child (CLI, pytester) imports
    `model_agents` from PYTHONPATH and runs without the sandbox."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MARATHON_SANDBOX", "off")
        patch.setenv("PYTHONPATH", str(AGENTS))
        patch.delenv("REPLAY_AGENT_VARIANT_AT", raising=False)
        sandbox_support.cache_clear()
        with pytest.warns(UserWarning, match="without a sandbox"):
            sandbox_support()
        yield patch
    sandbox_support.cache_clear()


@pytest.fixture
def double(user_env: pytest.MonkeyPatch, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelDouble]:
    """A double as the user's OpenAI upstream, with the user's key."""
    with ModelDouble(script=answers) as running:
        monkeypatch.setenv("OPENAI_BASE_URL", running.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-user-key")
        yield running


@dataclass(frozen=True)
class Recorded:
    bundle: Path  # the recorded run's bundle
    folder: Path  # its recording's folder
    requests: list[Exchange]  # what the double received while it was recorded


@pytest.fixture(scope="module")
def recorded(
    user_env: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Recorded]:
    """One recorded short-5 run of the agent for the module's replays; the double that answered
    it is stopped before any replay."""
    root = tmp_path_factory.mktemp("recorded")
    with ModelDouble(script=answers) as running, pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_BASE_URL", running.openai_base_url)
        patch.setenv("OPENAI_API_KEY", "sk-user-key")
        folder = root / "recording"
        result = run_marathon(_config(root, "live", record_model=folder), agent=AsksTheModel(),
                              baseline_cache=None, score=False)
        requests = list(running.exchanges)
    yield Recorded(result.bundle, folder, requests)


@pytest.fixture
def offline(user_env: pytest.MonkeyPatch, monkeypatch: pytest.MonkeyPatch) -> None:
    """No credentials and nowhere to go: a replay needs neither."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")


def _config(tmp_path: Path, out: str, **modes: Path) -> RunConfig:
    return RunConfig(app="boutique", agent=SPEC, seed=1, scenario="short-5",
                     out_dir=tmp_path / out, **modes)


def _shared_noop_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The noop-baseline cache the pytester sessions share (plugin_sessions.prepare_session)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    cache = root / "marathon-noop-cache"
    cache.mkdir(exist_ok=True)
    return cache


def _records(bundle: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (bundle / "invocations.jsonl").read_text().splitlines()]


def _manifest(bundle: Path) -> dict[str, Any]:
    return json.loads((bundle / "manifest.json").read_text())


def test_a_recording_holds_every_exchange_of_the_run_in_one_file(recorded: Recorded) -> None:
    model_calls = [e for e in recorded.requests if e.api in {"responses", "chat"}]
    assert model_calls and {e.api for e in model_calls} == {"responses", "chat"}
    assert any(e.stream for e in model_calls)
    (recording,) = recorded.folder.iterdir()  # one finished file per run, nothing partial left
    assert recording.name == f"{recorded.bundle.name}.jsonl"
    exchanges = read_recording(recording).exchanges
    assert len(exchanges) == len(recorded.requests)
    assert sum(r["model_calls"] for r in _records(recorded.bundle)) == len(model_calls)
    reports = (recorded.bundle / "reports.jsonl").read_text().splitlines()
    assert reports, "the agent acted on its model's answers"


def test_a_replayed_run_reproduces_the_recorded_one_without_the_upstream(
    recorded: Recorded, tmp_path: Path, offline: None
) -> None:
    replayed = run_marathon(_config(tmp_path, "replayed", replay_model=recorded.folder),
                            agent=AsksTheModel(), baseline_cache=None, score=False)
    assert replayed.replay_mismatch is None
    assert _manifest(replayed.bundle)["content_digest"] == _manifest(recorded.bundle)["content_digest"]
    before, after = _records(recorded.bundle), _records(replayed.bundle)
    assert [r["status"] for r in after] == ["ok"] * len(before)
    assert [{f: r[f] for f in USAGE_FIELDS} for r in after] == [
        {f: r[f] for f in USAGE_FIELDS} for r in before
    ]
    assert sum(r["cost_usd"] for r in after) > 0
    assert all(r["usage_source"] == "proxy" for r in after)


def test_a_replay_sends_nothing_to_the_upstream(
    recorded: Recorded, double: ModelDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even with an upstream configured and reachable, a replay does not call it."""
    replayed = run_marathon(_config(tmp_path, "replayed", replay_model=recorded.folder),
                            agent=AsksTheModel(), baseline_cache=None, score=False)
    assert double.exchanges == [], "the double saw no request during the replay"
    assert replayed.replay_mismatch is None


def test_a_changed_request_fails_the_run_naming_invocation_and_path_in_its_bundle(
    recorded: Recorded, tmp_path: Path, offline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPLAY_AGENT_VARIANT_AT", "3")
    result = run_marathon(_config(tmp_path, "variant", replay_model=recorded.folder),
                          agent=AsksTheModel(), baseline_cache=None, score=False)
    assert result.replay_mismatch is not None
    assert result.replay_mismatch.startswith(MISMATCH), result.replay_mismatch
    assert re.search(r'recorded "[^"]*\?", sent "[^"]*\? Answer in one word\."$',
                     result.replay_mismatch), result.replay_mismatch
    records = _records(result.bundle)
    assert [r.get("replay_mismatch") for r in records if r.get("replay_mismatch")] == [
        result.replay_mismatch
    ]
    assert records[2]["replay_mismatch"] == result.replay_mismatch
    assert records[2]["status"] == "crash"  # the agent's client got an HTTP error
    assert read_bundle(result.bundle).manifest["status"] == "complete"  # valid, verified


def test_the_cli_exits_non_zero_with_the_mismatch_line(
    recorded: Recorded, tmp_path: Path, offline: None, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory,
) -> None:
    monkeypatch.setenv("REPLAY_AGENT_VARIANT_AT", "3")
    code = main(["run", "--app", "boutique", "--agent", SPEC, "--seed", "1",
                 "--scenario", "short-5", "--out", str(tmp_path / "cli"), "--alerts", "0",
                 "--baseline-cache", str(_shared_noop_cache(tmp_path_factory)),
                 "--replay-model", str(recorded.folder)])
    assert code == 1
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "model replay" in x]
    assert line.startswith(f"pytest-marathon: {MISMATCH}")


@pytest.mark.parametrize("variant", [None, "3"])
def test_the_plugin_passes_a_faithful_replay_and_fails_a_changed_one_with_the_line(
    variant: str | None, recorded: Recorded, offline: None, monkeypatch: pytest.MonkeyPatch,
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    prepare_session(pytester, tmp_path_factory)
    if variant is not None:
        monkeypatch.setenv("REPLAY_AGENT_VARIANT_AT", variant)
    result = pytester.runpytest_subprocess(
        "--marathon-app=boutique", f"--agent={SPEC}", "--marathon-scenario=short-5",
        f"--marathon-replay-model={recorded.folder}", "-p", "no:cacheprovider", "-rf",
    )
    if variant is None:
        result.assert_outcomes(passed=1)
        return
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"{MISMATCH}*Answer in one word.*"])


def test_streams_replay_byte_for_byte_and_are_metered_as_live(
    double: ModelDouble, tmp_path: Path
) -> None:
    """Through the proxy itself: a stream whose usage chunk the client did not ask for reaches
    the client without it, live and replayed alike, and the same tokens are counted."""
    prices = load_price_table()
    request = {"model": "gpt-5-mini", "stream": True,
               "messages": [{"role": "user", "content": "Why frontend?"}]}

    def stream_through(proxy: MeteringProxy) -> tuple[bytes, Any]:
        proxy.begin_invocation(1)
        url = proxy.base_urls["openai"] + "/chat/completions"
        answer = httpx.post(url, json=request, headers={"authorization": "Bearer any"})
        return answer.content, proxy.end_invocation()

    live_modes = model_exchanges("streamed", tmp_path / "rec", None)
    with MeteringProxy(prices, None, upstreams_from_env(), exchanges=live_modes) as proxy:
        live, live_usage = stream_through(proxy)
    double.stop()
    replay_modes = model_exchanges("streamed", None, tmp_path / "rec")
    with MeteringProxy(prices, None, exchanges=replay_modes) as proxy:
        replayed, replayed_usage = stream_through(proxy)
    assert replayed == live
    assert b"data: [DONE]" in live and b'"usage"' not in live  # the hidden usage chunk stays hidden
    assert replayed_usage == live_usage and live_usage.output_tokens > 0
    (exchange,) = read_recording(tmp_path / "rec" / "streamed.jsonl").exchanges
    assert exchange.headers["content-type"].startswith("text/event-stream")
    assert b'"usage"' in exchange.content  # recorded as the upstream sent it


def test_a_recording_cut_short_by_a_crash_is_readable_up_to_its_last_whole_line(
    double: ModelDouble, tmp_path: Path
) -> None:
    modes = model_exchanges("cut", tmp_path, None)
    with MeteringProxy(load_price_table(), None, upstreams_from_env(), exchanges=modes) as proxy:
        for question in ("one?", "two?"):
            httpx.post(proxy.base_urls["openai"] + "/responses",
                       json={"model": "gpt-5-mini", "input": question})
    whole = (tmp_path / "cut.jsonl").read_text()
    lines = whole.splitlines(keepends=True)
    crashed = tmp_path / "crashed.jsonl"
    crashed.write_text("".join(lines[:2]) + lines[2][:25])  # header, one exchange, half a line
    with pytest.raises(RecordingError, match="no end line"):
        read_recording(crashed)
    (kept,) = read_recording(crashed, allow_partial=True).exchanges
    assert kept.request == {"json": {"model": "gpt-5-mini", "input": "one?"}}


def test_record_and_replay_together_or_a_missing_recording_is_refused_before_running(
    user_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    pytester: pytest.Pytester,
) -> None:
    base = ["run", "--app", "boutique", "--agent", SPEC, "--seed", "1", "--scenario", "short-5",
            "--out", str(tmp_path / "out")]
    assert main([*base, "--record-model", str(tmp_path), "--replay-model", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--record-model and --replay-model cannot be used together" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([*base, "--replay-model", str(empty)]) == 2
    assert "no model recording" in capsys.readouterr().err
    assert main([*base, "--replay-model", str(tmp_path / "nowhere")]) == 2
    assert "--replay-model: no folder" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()

    both = pytester.runpytest_subprocess(
        "--marathon-app=boutique", "--agent=noop", f"--marathon-record-model={tmp_path}",
        f"--marathon-replay-model={tmp_path}",
    )
    assert both.ret == pytest.ExitCode.USAGE_ERROR
    both.stderr.fnmatch_lines(
        ["*--marathon-record-model and --marathon-replay-model cannot be used together*"]
    )
    missing = pytester.runpytest_subprocess(
        "--marathon-app=boutique", f"--agent={SPEC}", "--marathon-scenario=short-5",
        f"--marathon-replay-model={empty}", f"--marathon-bundle-dir={tmp_path / 'bundles'}",
        "-p", "no:cacheprovider",
    )
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["--marathon-replay-model: no model recording *empty*.jsonl"])
    assert not (tmp_path / "bundles").exists()


def test_identical_requests_get_their_answers_in_order_and_a_missing_one_is_named(
    user_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The k-th identical request gets the k-th recorded answer; one more than recorded, or a
    recorded request never sent by the end of its invocation, is a mismatch."""
    told = iter(range(1, 100))
    prices = load_price_table()
    request = {"model": "gpt-5-mini", "input": "Same question?"}

    def ask(proxy: MeteringProxy) -> httpx.Response:
        return httpx.post(proxy.base_urls["openai"] + "/responses", json=request)

    with ModelDouble(script=lambda conv: Text(f"answer {next(told)}")) as double:
        upstreams = upstreams_from_env({"OPENAI_BASE_URL": double.openai_base_url})
        modes = model_exchanges("same", tmp_path, None)
        with MeteringProxy(prices, None, upstreams, exchanges=modes) as proxy:
            proxy.begin_invocation(1)
            live = [ask(proxy).json()["output"][0]["content"][0]["text"] for _ in range(2)]
            proxy.end_invocation()
            proxy.begin_invocation(2)
            ask(proxy)
            proxy.end_invocation()
    assert live == ["answer 1", "answer 2"]

    with MeteringProxy(prices, None, exchanges=model_exchanges("same", None, tmp_path)) as proxy:
        proxy.begin_invocation(1)
        replayed = [ask(proxy).json()["output"][0]["content"][0]["text"] for _ in range(2)]
        assert replayed == live
        assert proxy.end_invocation().replay_mismatch is None
        proxy.begin_invocation(2)
        assert proxy.end_invocation().replay_mismatch == (
            "model replay: invocation 2, request 1 (POST openai/v1/responses) is in the "
            "recording but the run did not send it"
        )

    with MeteringProxy(prices, None, exchanges=model_exchanges("same", None, tmp_path)) as proxy:
        proxy.begin_invocation(1)
        sent = [ask(proxy) for _ in range(4)]
        assert [a.status_code for a in sent] == [200, 200, 200, 400]
        assert "invocation 1, request 4" in sent[3].json()["error"]["message"]
        metering = proxy.end_invocation()
    assert metering.replay_mismatch == (
        "model replay: invocation 1, request 4 (POST openai/v1/responses) is not in the "
        "recording same.jsonl"
    )


def test_an_anthropic_stream_replays_byte_for_byte_with_its_tokens(
    user_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    request = {"model": "claude-sonnet-4-5", "max_tokens": 64, "stream": True,
               "messages": [{"role": "user", "content": "Why frontend?"}]}

    def stream_through(proxy: MeteringProxy) -> tuple[bytes, Any]:
        proxy.begin_invocation(1)
        answer = httpx.post(proxy.base_urls["anthropic"] + "/v1/messages?beta=true",
                            json=request, headers={"x-api-key": "any"})
        return answer.content, proxy.end_invocation()

    prices = load_price_table()
    with ModelDouble(script=lambda conv: Text("Its pods keep restarting.")) as double:
        upstreams = upstreams_from_env({"ANTHROPIC_BASE_URL": double.anthropic_base_url})
        modes = model_exchanges("claude", tmp_path, None)
        with MeteringProxy(prices, None, upstreams, exchanges=modes) as proxy:
            live, live_usage = stream_through(proxy)
    with MeteringProxy(prices, None, exchanges=model_exchanges("claude", None, tmp_path)) as proxy:
        replayed, replayed_usage = stream_through(proxy)
    assert replayed == live and b"event: message_stop" in live
    assert replayed_usage == live_usage and live_usage.cost_usd > 0
    (exchange,) = read_recording(tmp_path / "claude.jsonl").exchanges
    assert exchange.route == "anthropic/v1/messages?beta=true" and exchange.metered


def test_unmetered_routes_are_recorded_and_replayed_too(
    user_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with ModelDouble() as double:
        upstreams = upstreams_from_env({"OPENAI_BASE_URL": double.openai_base_url})
        modes = model_exchanges("listing", tmp_path, None)
        with MeteringProxy(load_price_table(), None, upstreams, exchanges=modes) as proxy:
            live = httpx.get(proxy.base_urls["openai"] + "/models")
    with MeteringProxy(load_price_table(), None,
                       exchanges=model_exchanges("listing", None, tmp_path)) as proxy:
        replayed = httpx.get(proxy.base_urls["openai"] + "/models")
        assert proxy.end_invocation().requests == 0  # neither live nor replayed is counted
    assert (replayed.status_code, replayed.json()) == (200, live.json())
    (exchange,) = read_recording(tmp_path / "listing.jsonl").exchanges
    assert (exchange.method, exchange.route, exchange.metered) == ("GET", "openai/v1/models", False)


def test_the_marathon_fixture_replays_as_the_session_says(
    recorded: Recorded, offline: None, pytester: pytest.Pytester,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    prepare_session(pytester, tmp_path_factory)
    pytester.makepyfile(test_replayed=f'''
        import json

        def test_replayed(marathon):
            result = marathon.run(agent="{SPEC}", scenario="short-5")
            assert result.replay_mismatch is None
            manifest = json.loads((result.bundle / "manifest.json").read_text())
            assert manifest["content_digest"] == "{_manifest(recorded.bundle)["content_digest"]}"
    ''')
    result = pytester.runpytest_subprocess(f"--marathon-replay-model={recorded.folder}",
                                           "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
