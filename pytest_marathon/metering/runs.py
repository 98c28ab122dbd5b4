"""The metering of one run, as the runner uses it: whether to start the proxy, and what an
invocation's record says it spent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_marathon.metering.exchanges import ModelExchanges, model_exchanges
from pytest_marathon.metering.ledger import InvocationMetering
from pytest_marathon.metering.prices import load_price_table
from pytest_marathon.metering.proxy import MeteringProxy

USAGE_FIELDS = ("model_calls", "input_tokens", "output_tokens", "cost_usd")


def uses_models(agent: object) -> bool:
    """Whether an agent may call a model: every agent except those that declare
    `uses_models = False` (the model-free built-in baselines), which run without a proxy."""
    return bool(getattr(agent, "uses_models", True))


def prepare_exchanges(agent: object, config: Any) -> ModelExchanges | None:
    """The run's record or replay mode (`config.record_model` / `config.replay_model`), its
    recording read now so that a missing or broken one stops the run before anything is
    written (a RecordingError, a ValueError). None for an agent that uses no model: it has no
    exchanges to record, and needs no recording to replay."""
    record = getattr(config, "record_model", None)
    replay = getattr(config, "replay_model", None)
    if not uses_models(agent) or (record is None and replay is None):
        return None
    return model_exchanges(config.run_id, record, replay)


def start_metering(
    agent: object, config: Any, exchanges: ModelExchanges | None = None
) -> MeteringProxy | None:
    """The run's proxy (forwarding to the upstreams of the runner's environment, or answering
    from a recording), or None for an agent that uses no model."""
    if not uses_models(agent):
        return None
    return MeteringProxy(
        load_price_table(config.price_table), config.max_cost_usd, exchanges=exchanges
    )


def usage_record(
    self_reported: Mapping[str, Any], metering: InvocationMetering | None
) -> dict[str, Any]:
    """The usage fields of an `invocations.jsonl` record. With the proxy they are its
    measurement (`usage_source: proxy`) and what the agent said it spent, if anything, is kept
    beside them as `self_reported`; without it they are the agent's own report."""
    reported = {name: self_reported[name] for name in USAGE_FIELDS if self_reported.get(name)}
    if metering is None:
        usage: dict[str, Any] = {"model_calls": 0, "input_tokens": 0, "output_tokens": 0}
        usage["cost_usd"] = 0.0
        return {**usage, **reported, "usage_source": "agent"}
    record = {**metering.record_fields(), "usage_source": "proxy"}
    if reported:
        record["self_reported"] = reported
    return record
