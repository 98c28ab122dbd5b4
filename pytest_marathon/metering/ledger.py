"""Per-invocation accounting of metered model calls, and the run's dollar budget.

The proxy serves requests on its own thread while the runner's loop asks, after each invocation
whatever its outcome, what that invocation spent; a lock keeps the two consistent. A request
belongs to the invocation that was running when it arrived, and its tokens are added when its
answer (or its stream) ends, so calls that finished before a timeout or a crash are counted.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from pytest_marathon.metering.prices import PriceTable, TokenCounts

#: How long `end_invocation` waits for the calls of the ending invocation still being answered
#: (a killed agent's connections close at once; a plug-in's thread may still be reading).
SETTLE_GRACE_S = 2.0
#: The invocation number of calls made while no invocation runs.
OUTSIDE = 0


@dataclass(frozen=True)
class InvocationMetering:
    """What one invocation's model calls cost, as the proxy measured it.

    `requests`: calls forwarded to the upstream (any answer, errors included); `refused`: calls
    refused because the run's budget was spent; `unpriced_models`: models the price table does not
    list (their tokens are counted, their dollars are not); `unsettled`: calls still unanswered
    when the invocation was closed (their tokens, if any, are not in this record);
    `replay_mismatch`: the run's first request that its model recording could not answer (or a
    recorded one it did not send), in one line, on the invocation where it was found.
    """

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cost_usd: float = 0.0
    refused: int = 0
    unpriced_models: tuple[str, ...] = ()
    unsettled: int = 0
    replay_mismatch: str | None = None

    def record_fields(self) -> dict[str, object]:
        """The `invocations.jsonl` fields (docs/internals.md): the four usage fields every
        record has, and the metering details (`replay_mismatch` only when there is one)."""
        fields: dict[str, object] = {
            "model_calls": self.requests,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "cached_input_tokens": self.cached_input_tokens,
            "refused_calls": self.refused,
            "unpriced_models": list(self.unpriced_models),
            "unsettled_calls": self.unsettled,
        }
        if self.replay_mismatch is not None:
            fields["replay_mismatch"] = self.replay_mismatch
        return fields


@dataclass
class _Counter:
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cost_usd: float = 0.0
    refused: int = 0
    in_flight: int = 0
    unpriced: set[str] = field(default_factory=set)

    def snapshot(self) -> InvocationMetering:
        return InvocationMetering(
            self.requests,
            self.input_tokens,
            self.output_tokens,
            self.cached_input_tokens,
            self.cost_usd,
            self.refused,
            tuple(sorted(self.unpriced)),
            self.in_flight,
        )


@dataclass(frozen=True)
class Ticket:
    """An admitted call: which invocation it is charged to."""

    invocation: int


class Ledger:
    def __init__(self, prices: PriceTable, max_cost_usd: float | None) -> None:
        self.prices = prices
        self.max_cost_usd = max_cost_usd
        self._lock = threading.Condition()
        self._current = OUTSIDE
        self._counters: dict[int, _Counter] = {OUTSIDE: _Counter()}
        self._spent = 0.0
        self._requests = 0

    @property
    def spent_usd(self) -> float:
        with self._lock:
            return self._spent

    @property
    def exhausted(self) -> bool:
        with self._lock:
            return self._exhausted()

    def _exhausted(self) -> bool:
        return self.max_cost_usd is not None and self._spent >= self.max_cost_usd

    def begin_invocation(self, n: int) -> None:
        with self._lock:
            self._current = n
            self._counters[n] = _Counter()

    def end_invocation(self, grace_s: float = SETTLE_GRACE_S) -> InvocationMetering:
        """Close the running invocation and return what it spent, after waiting up to `grace_s`
        for its calls still being answered."""
        deadline = time.monotonic() + grace_s
        with self._lock:
            n = self._current
            counter = self._counters[n]
            while counter.in_flight and (left := deadline - time.monotonic()) > 0:
                self._lock.wait(left)
            self._current = OUTSIDE
            return counter.snapshot()

    def admit(self) -> Ticket | None:
        """A ticket for one call, or None (and the refusal counted) when the budget is spent."""
        with self._lock:
            counter = self._counters[self._current]
            if self._exhausted():
                counter.refused += 1
                return None
            counter.requests += 1
            counter.in_flight += 1
            self._requests += 1
            return Ticket(self._current)

    def settle(self, ticket: Ticket, model: str | None, tokens: TokenCounts | None) -> None:
        """Charge a finished call's tokens (None: the answer reported none) to its invocation."""
        with self._lock:
            counter = self._counters[ticket.invocation]
            counter.in_flight -= 1
            if tokens is not None:
                counter.input_tokens += tokens.input_tokens
                counter.output_tokens += tokens.output_tokens
                counter.cached_input_tokens += tokens.cached_input_tokens
                cost = self.prices.cost(model, tokens)
                if cost is None:
                    if tokens.input_tokens or tokens.output_tokens:
                        counter.unpriced.add(model or "(unnamed model)")
                else:
                    counter.cost_usd += cost
                    self._spent += cost
            self._lock.notify_all()

    def budget_message(self) -> str:
        return (
            f"pytest-marathon metering: this run's model budget of ${self.max_cost_usd:.2f} "
            f"(--marathon-max-cost) is spent (${self.spent_usd:.2f}); no further model calls "
            "are forwarded in this run"
        )


#: Values of `--marathon-max-cost` / `--max-cost` that switch the budget off.
NO_BUDGET = ("none", "off", "unlimited")


def parse_max_cost(raw: str | float | None, default: float | None) -> float | None:
    """A run's budget in USD from an option value: a number >= 0 (0 forwards no priced call at
    all), or `none`/`off`/`unlimited` for no budget; `default` when not given."""
    if raw is None or raw == "":
        return default
    if isinstance(raw, str) and raw.strip().lower() in NO_BUDGET:
        return None
    try:
        value = float(str(raw).strip().removeprefix("$"))
    except ValueError:
        raise ValueError(
            f"{raw!r} is not a dollar amount; use a number >= 0 (e.g. 8 or 2.50) or "
            + "/".join(NO_BUDGET)
            + " for no budget"
        ) from None
    if value < 0 or value != value or value == float("inf"):
        raise ValueError(f"{raw!r}: the budget must be a finite number >= 0")
    return value
