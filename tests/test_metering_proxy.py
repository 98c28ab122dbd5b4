"""The metering proxy between agents and model providers, driven through its public interface:
the real `openai` SDK and raw HTTP against the proxy, the scripted model double as the upstream.

The double reports usage as a fixed function of what it received and records every request's
headers, so each test can check the proxy counted exactly what the upstream reported and that
the upstream saw the user's key, never the agent's placeholder.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import openai
import pytest
from model_double import ModelDouble, Text

from pytest_marathon.metering import (
    PLACEHOLDER_KEY,
    MeteringProxy,
    PriceTableError,
    TokenCounts,
    Upstream,
    agent_environment,
    load_price_table,
    parse_max_cost,
    upstreams_from_env,
)
from pytest_marathon.metering.usage import tokens_of

REAL_OPENAI = "sk-real-user-key-openai"
REAL_ANTHROPIC = "sk-ant-real-user-key"
MODEL = "gpt-5-mini-2025-08-07"  # priced by the built-in table as gpt-5-mini
CLAUDE = "claude-sonnet-4-5-20250929"
GPT5_MINI = (0.25, 2.00)  # USD per million input / output tokens
SONNET = (3.00, 15.00)


def _header(exchange, name: str) -> str | None:
    """A header the double received (HTTP header names are case-insensitive)."""
    return {k.lower(): v for k, v in exchange.headers.items()}.get(name.lower())


def _cost(usage: tuple[int, int], price: tuple[float, float]) -> float:
    return (usage[0] * price[0] + usage[1] * price[1]) / 1_000_000


@pytest.fixture(scope="module")
def double() -> Iterator[ModelDouble]:
    with ModelDouble(script=lambda conv: Text("All quiet."), model=MODEL) as running:
        yield running


def _upstreams(double: ModelDouble) -> dict[str, Upstream]:
    return upstreams_from_env(
        {
            "OPENAI_BASE_URL": double.openai_base_url,
            "OPENAI_API_KEY": REAL_OPENAI,
            "ANTHROPIC_BASE_URL": double.anthropic_base_url,
            "ANTHROPIC_API_KEY": REAL_ANTHROPIC,
        }
    )


@pytest.fixture
def proxy(double: ModelDouble) -> Iterator[MeteringProxy]:
    double.exchanges.clear()
    with MeteringProxy(load_price_table(), 8.0, _upstreams(double)) as running:
        running.begin_invocation(1)
        yield running


def _sdk(proxy: MeteringProxy, **kwargs: object) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.base_urls["openai"], api_key=PLACEHOLDER_KEY, **kwargs)


def _anthropic(proxy: MeteringProxy, body: dict, stream: bool = False) -> httpx.Response:
    return httpx.post(
        proxy.base_urls["anthropic"] + "/v1/messages",
        json={**body, "stream": stream},
        headers={"x-api-key": PLACEHOLDER_KEY, "anthropic-version": "2023-06-01"},
        timeout=30,
    )


MESSAGES = {"model": CLAUDE, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}


# the three wire formats, streamed and not ---------------------------------------------------


def test_responses_calls_are_forwarded_with_the_users_key_and_metered(proxy, double):
    client = _sdk(proxy)
    answer = client.responses.create(model=MODEL, input="status?")
    with client.responses.stream(model=MODEL, input="status again?") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert answer.output_text == "All quiet." and "".join(deltas) == "All quiet."
    assert final.usage is not None
    usages = [e.usage for e in double.model_exchanges("responses")]
    assert [e.stream for e in double.model_exchanges()] == [False, True]
    assert {_header(e, "authorization") for e in double.exchanges} == {f"Bearer {REAL_OPENAI}"}
    spent = proxy.end_invocation()
    assert spent.requests == 2
    assert (spent.input_tokens, spent.output_tokens) == tuple(map(sum, zip(*usages)))
    assert spent.cost_usd == pytest.approx(sum(_cost(u, GPT5_MINI) for u in usages))
    assert spent.unpriced_models == () and spent.refused == 0 and spent.unsettled == 0


def test_chat_streams_are_metered_without_showing_the_client_a_usage_chunk_it_did_not_ask_for(
    proxy, double
):
    client = _sdk(proxy)
    whole = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "a"}])
    chunks = list(
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "b"}], stream=True
        )
    )
    asked = list(
        client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "c"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert whole.choices[0].message.content == "All quiet."
    assert all(chunk.choices for chunk in chunks), "the usage chunk was not asked for"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "All quiet."
    assert asked[-1].choices == [] and asked[-1].usage is not None
    sent = [e.body.get("stream_options") for e in double.model_exchanges("chat")]
    assert sent == [None, {"include_usage": True}, {"include_usage": True}]
    usages = [e.usage for e in double.model_exchanges("chat")]
    spent = proxy.end_invocation()
    assert spent.requests == 3
    assert (spent.input_tokens, spent.output_tokens) == tuple(map(sum, zip(*usages)))
    assert spent.cost_usd == pytest.approx(sum(_cost(u, GPT5_MINI) for u in usages))


def test_anthropic_messages_are_metered_streamed_or_not_and_count_tokens_is_not(proxy, double):
    whole = _anthropic(proxy, MESSAGES)
    streamed = _anthropic(proxy, MESSAGES, stream=True)
    counted = httpx.post(
        proxy.base_urls["anthropic"] + "/v1/messages/count_tokens",
        json=MESSAGES,
        headers={"x-api-key": PLACEHOLDER_KEY},
    )
    assert whole.status_code == 200 and whole.json()["content"][0]["text"] == "All quiet."
    assert streamed.headers["content-type"].startswith("text/event-stream")
    kinds = [
        json.loads(line[5:])["type"] for line in streamed.text.splitlines() if line.startswith("data:")
    ]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert counted.status_code == 200 and counted.json()["input_tokens"] > 0
    assert {_header(e, "x-api-key") for e in double.exchanges} == {REAL_ANTHROPIC}
    assert all(_header(e, "authorization") is None for e in double.exchanges)
    usages = [e.usage for e in double.model_exchanges("messages")]
    spent = proxy.end_invocation()
    assert spent.requests == 2  # count_tokens is forwarded, not counted
    assert (spent.input_tokens, spent.output_tokens) == tuple(map(sum, zip(*usages)))
    assert spent.cost_usd == pytest.approx(sum(_cost(u, SONNET) for u in usages))


def test_other_openai_routes_are_passed_through_uncounted(proxy):
    models = _sdk(proxy).models.list()
    assert [m.id for m in models] == [MODEL]
    assert proxy.end_invocation().requests == 0


def test_a_stream_reaches_the_client_event_by_event_not_at_its_end(double):
    slow = ModelDouble(script=lambda conv: Text("x" * 240), model=MODEL, stream_delay_s=0.05)
    with slow, MeteringProxy(load_price_table(), None, _upstreams(slow)) as proxy:
        started = time.monotonic()
        arrivals = []
        with _sdk(proxy).responses.stream(model=MODEL, input="go") as stream:
            for _ in stream:
                arrivals.append(time.monotonic() - started)
        # the double pauses 0.05 s after each of its > 10 events: a proxy that buffered the
        # stream would hand them over all at once
        assert len(arrivals) > 10
        assert arrivals[-1] - arrivals[0] > 0.4, arrivals


def test_calls_are_charged_to_the_invocation_that_was_running(double):
    with MeteringProxy(load_price_table(), None, _upstreams(double)) as proxy:
        client = _sdk(proxy)
        client.responses.create(model=MODEL, input="before any invocation")
        proxy.begin_invocation(1)
        client.responses.create(model=MODEL, input="one")
        client.responses.create(model=MODEL, input="two")
        first = proxy.end_invocation()
        proxy.begin_invocation(2)
        second = proxy.end_invocation()
        proxy.begin_invocation(3)
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "3"}])
        third = proxy.end_invocation()
    assert (first.requests, second.requests, third.requests) == (2, 0, 1)
    assert second.input_tokens == 0 and third.input_tokens > 0


# prices ----------------------------------------------------------------------------------------


def test_the_price_table_prices_dated_snapshots_and_flags_unlisted_models(double, tmp_path):
    table = load_price_table()
    assert table.price_of("gpt-5-mini-2025-08-07") is table.price_of("gpt-5-mini")
    assert table.price_of("claude-3-5-haiku-latest") is table.price_of("claude-3-5-haiku")
    assert table.price_of("gpt-5-mini-turbo") is None, "a prefix is not a price"
    cached = TokenCounts(input_tokens=1_000_000, output_tokens=0, cached_input_tokens=400_000)
    assert table.cost("gpt-5", cached) == pytest.approx(0.6 * 1.25 + 0.4 * 0.125)
    with MeteringProxy(table, 8.0, _upstreams(double)) as proxy:
        proxy.begin_invocation(1)
        _sdk(proxy).responses.create(model="in-house-model-7", input="hello")
        spent = proxy.end_invocation()
    assert spent.requests == 1 and spent.input_tokens > 0
    assert spent.cost_usd == 0.0 and spent.unpriced_models == ("in-house-model-7",)
    assert spent.record_fields()["unpriced_models"] == ["in-house-model-7"]


def test_a_users_price_table_replaces_the_built_in_one(double, tmp_path):
    path = tmp_path / "prices.yaml"
    path.write_text("models:\n  in-house-model-7: {input: 100, output: 1000}\n")
    table = load_price_table(path)
    assert table.digest != load_price_table().digest
    assert table.price_of("gpt-5") is None
    with MeteringProxy(table, None, _upstreams(double)) as proxy:
        proxy.begin_invocation(1)
        _sdk(proxy).responses.create(model="in-house-model-7", input="hello")
        spent = proxy.end_invocation()
    usage = double.model_exchanges()[-1].usage
    assert spent.cost_usd == pytest.approx(_cost(usage, (100, 1000)))
    assert spent.unpriced_models == ()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("models: {}\n", "expected a mapping `models:`"),
        ("models:\n  m: {input: 1}\n", "no 'output' price"),
        ("models:\n  m: {input: -1, output: 2}\n", "must be a number >= 0"),
        ("models:\n  m: {input: 1, output: 2, cached: 1}\n", "unknown field(s) cached"),
        ("models: [\n", "not YAML"),
    ],
)
def test_a_bad_price_table_is_refused_naming_the_problem(tmp_path, text, problem):
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(PriceTableError, match="price table .*prices.yaml") as caught:
        load_price_table(path)
    assert problem in str(caught.value)


def test_the_budget_option_accepts_dollars_and_none():
    assert parse_max_cost(None, 8.0) == 8.0
    assert parse_max_cost("2.5", 8.0) == 2.5 and parse_max_cost("$3", 8.0) == 3.0
    assert parse_max_cost("0", 8.0) == 0.0
    assert parse_max_cost("none", 8.0) is None and parse_max_cost("OFF", 8.0) is None
    for bad in ("cheap", "-1", "inf"):
        with pytest.raises(ValueError):
            parse_max_cost(bad, 8.0)


# the budget ------------------------------------------------------------------------------------


def test_once_the_budget_is_spent_calls_are_refused_in_each_apis_error_format(double):
    with MeteringProxy(load_price_table(), 1e-6, _upstreams(double)) as proxy:
        proxy.begin_invocation(1)
        client = _sdk(proxy)  # the SDK retries 429s by default: the refusal says not to
        client.responses.create(model=MODEL, input="the call that spends the budget")
        forwarded = len(double.exchanges)
        with pytest.raises(openai.RateLimitError) as refused:
            client.responses.create(model=MODEL, input="one too many")
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
        anthropic = _anthropic(proxy, MESSAGES)
        assert len(double.exchanges) == forwarded, "refused calls never reach the upstream"
        assert client.models.list().data, "other routes still work"
        spent = proxy.end_invocation()
    assert refused.value.code == "insufficient_quota"
    assert "budget of $0.00 (--marathon-max-cost) is spent" in refused.value.message
    assert anthropic.status_code == 402
    assert anthropic.json()["type"] == "error"
    assert anthropic.json()["error"]["type"] == "billing_error"
    assert (spent.requests, spent.refused) == (1, 3)
    assert spent.record_fields()["refused_calls"] == 3


def test_a_zero_budget_forwards_no_call_and_no_budget_forwards_every_call(double):
    with MeteringProxy(load_price_table(), 0.0, _upstreams(double)) as proxy:
        proxy.begin_invocation(1)
        with pytest.raises(openai.RateLimitError):
            _sdk(proxy).responses.create(model=MODEL, input="x")
        assert proxy.end_invocation().refused == 1
    with MeteringProxy(load_price_table(), None, _upstreams(double)) as proxy:
        proxy.begin_invocation(1)
        for _ in range(3):
            _sdk(proxy).responses.create(model=MODEL, input="x")
        assert proxy.end_invocation().requests == 3


# credentials and the door ----------------------------------------------------------------------


def test_agents_get_the_proxy_and_a_placeholder_never_the_users_credentials():
    urls = {"openai": "http://127.0.0.1:1/t/openai/v1", "anthropic": "http://127.0.0.1:1/t/anthropic"}
    runner = {"OPENAI_API_KEY": REAL_OPENAI, "CLAUDE_CODE_OAUTH_TOKEN": "oauth-real"}
    env = agent_environment(urls, runner)
    assert env["OPENAI_BASE_URL"] == urls["openai"] and env["ANTHROPIC_BASE_URL"] == urls["anthropic"]
    assert env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"] == PLACEHOLDER_KEY
    assert env["CLAUDE_CODE_OAUTH_TOKEN"] == PLACEHOLDER_KEY
    assert "ANTHROPIC_AUTH_TOKEN" not in env  # not set for the runner: not invented for the agent
    assert agent_environment({}, runner) == {}


def test_the_proxy_answers_only_under_its_run_token(proxy):
    root = proxy.base_urls["openai"].split("/openai/")[0].rsplit("/", 1)[0]
    guessed = httpx.post(f"{root}/openai/v1/responses", json={"model": MODEL, "input": "x"})
    assert guessed.status_code == 404
    assert proxy.end_invocation().requests == 0


def test_an_unreachable_upstream_is_a_provider_style_error_not_a_hang(double):
    gone = {"openai": Upstream("http://127.0.0.1:9/v1", {}), "anthropic": Upstream("http://127.0.0.1:9", {})}
    with MeteringProxy(load_price_table(), None, gone) as proxy:
        proxy.begin_invocation(1)
        with pytest.raises(openai.APIStatusError) as failed:
            _sdk(proxy, max_retries=0).responses.create(model=MODEL, input="x")
        spent = proxy.end_invocation()
    assert failed.value.status_code == 502
    assert (spent.requests, spent.unsettled) == (1, 0)


def test_a_stream_cut_by_the_client_is_counted_and_settled(double):
    slow = ModelDouble(script=lambda conv: Text("y" * 480), model=MODEL, stream_delay_s=0.05)
    with slow, MeteringProxy(load_price_table(), None, _upstreams(slow)) as proxy:
        proxy.begin_invocation(1)
        with httpx.stream(
            "POST",
            proxy.base_urls["openai"] + "/responses",
            json={"model": MODEL, "input": "go", "stream": True},
            timeout=30,
        ) as answer:
            next(answer.iter_bytes())
        spent = proxy.end_invocation()
    assert (spent.requests, spent.unsettled) == (1, 0)


def test_the_price_table_ships_with_the_package():
    path = Path(__file__).parents[1] / "setup.cfg"
    assert "pytest_marathon.metering = *.yaml" in path.read_text()


def test_a_star_entry_prices_every_model_the_table_does_not_list(tmp_path):
    path = tmp_path / "prices.yaml"
    path.write_text('models:\n  gpt-5: {input: 1, output: 1}\n  "*": {input: 50, output: 100}\n')
    table = load_price_table(path)
    tokens = TokenCounts(input_tokens=1_000_000, output_tokens=1_000_000)
    assert table.cost("gpt-5", tokens) == 2.0
    assert table.cost("gpt-6.2-sol", tokens) == 150.0
    assert load_price_table().price_of("gpt-6.2-sol") is None


def test_tokens_are_normalised_across_the_wire_formats():
    anthropic = tokens_of(
        "anthropic",
        {"input_tokens": 100, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 50,
         "output_tokens": 20},
    )
    assert anthropic == TokenCounts(
        input_tokens=1050, output_tokens=20, cached_input_tokens=900, cache_write_tokens=50
    )
    responses = tokens_of(
        "responses", {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 600},
                      "output_tokens": 7}
    )
    chat = tokens_of(
        "chat", {"prompt_tokens": 1000, "prompt_tokens_details": {"cached_tokens": 600},
                 "completion_tokens": 7}
    )
    assert responses == chat == TokenCounts(1000, 7, 600)
    sonnet = load_price_table().price_of("claude-sonnet-4-5")
    assert sonnet.cost(anthropic) == pytest.approx((100 * 3 + 900 * 0.3 + 50 * 3.75 + 20 * 15) / 1e6)


def test_a_call_still_answered_when_its_invocation_ends_is_unsettled_and_still_costs(double):
    slow = ModelDouble(script=lambda conv: Text("z" * 1200), model=MODEL, stream_delay_s=0.05)
    with slow, MeteringProxy(load_price_table(), None, _upstreams(slow)) as proxy:
        proxy.begin_invocation(1)
        reader = threading.Thread(
            target=lambda: list(_sdk(proxy).responses.create(model=MODEL, input="go", stream=True))
        )
        reader.start()
        time.sleep(0.3)
        record = proxy.end_invocation()  # waits its 2 s grace, the stream takes ~3 s
        reader.join(30)
        spent = proxy.spent_usd
    assert (record.requests, record.unsettled, record.input_tokens) == (1, 1, 0)
    assert spent == pytest.approx(_cost(slow.model_exchanges()[0].usage, GPT5_MINI))
