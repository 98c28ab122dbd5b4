"""Metering of agents' model calls: a loopback proxy per run that forwards to the user's model
providers with the user's credentials, measures requests, tokens and dollars per invocation from
the providers' own answers, and enforces the run's dollar budget (`--marathon-max-cost`)."""

from pytest_marathon.config import DEFAULT_MAX_COST_USD
from pytest_marathon.metering.credentials import (
    PLACEHOLDER_KEY,
    Upstream,
    agent_environment,
    upstreams_from_env,
)
from pytest_marathon.metering.ledger import InvocationMetering, Ledger, parse_max_cost
from pytest_marathon.metering.prices import (
    PriceTable,
    PriceTableError,
    TokenCounts,
    load_price_table,
)
from pytest_marathon.metering.proxy import MeteringProxy

__all__ = [
    "DEFAULT_MAX_COST_USD",
    "PLACEHOLDER_KEY",
    "InvocationMetering",
    "Ledger",
    "MeteringProxy",
    "PriceTable",
    "PriceTableError",
    "TokenCounts",
    "Upstream",
    "agent_environment",
    "load_price_table",
    "parse_max_cost",
    "upstreams_from_env",
]
