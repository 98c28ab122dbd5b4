"""A corpus of agents that return malformed usage, garbage or raise: each must still give a
recorded, sealed, scorable run whose invocations say, in one line, which agent got what wrong.

`CORPUS` maps each agent class to the fragments its invocation detail must hold (the field, or
what was returned) and the status the invocation must end with."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage


class _Malformed:
    description = "returns something the runner must refuse"

    def __init__(self) -> None:
        self.name = type(self).__name__

    def result(self) -> Any:
        raise NotImplementedError

    def invoke(self, ctx: InvocationContext) -> Any:
        ctx.tools.call("get_alerts")  # real work first: the run's evidence must survive the bug
        return self.result()


class ManyTokens(_Malformed):
    def result(self) -> Any:
        return InvocationUsage(input_tokens="many")  # type: ignore[arg-type]


class NanCost(_Malformed):
    def result(self) -> Any:
        return InvocationUsage(model_calls=1, cost_usd=float("nan"))


class InfiniteTokens(_Malformed):
    def result(self) -> Any:
        return {"output_tokens": float("inf")}


class NegativeCalls(_Malformed):
    def result(self) -> Any:
        return InvocationUsage(model_calls=-5)


class HugeTokens(_Malformed):
    def result(self) -> Any:
        return InvocationUsage(input_tokens=10**30)


class HugeCost(_Malformed):
    def result(self) -> Any:
        return {"cost_usd": 5e6}


class BoolCalls(_Malformed):
    def result(self) -> Any:
        return {"model_calls": True}


class FractionalTokens(_Malformed):
    def result(self) -> Any:
        return {"output_tokens": 2.5}


class WeirdStatus(_Malformed):
    def result(self) -> Any:
        return InvocationUsage(status="weird")


class StatusNumber(_Malformed):
    def result(self) -> Any:
        return {"status": 3}


class DetailObject(_Malformed):
    def result(self) -> Any:
        return {"detail": {"nested": [1, 2]}}


class AnswerText(_Malformed):
    def result(self) -> Any:
        return "I restarted the cart service"


class ListReturn(_Malformed):
    def result(self) -> Any:
        return [1, 2, 3]


class NumberReturn(_Malformed):
    def result(self) -> Any:
        return 42


class _Unreadable(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("no")

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def get(self, key: str, default: Any = None) -> Any:
        raise RuntimeError("no")


class UnreadableMapping(_Malformed):
    def result(self) -> Any:
        return _Unreadable()


class _Slotted:
    __slots__ = ("input_tokens", "cost_usd")

    def __init__(self) -> None:
        self.input_tokens = -1
        self.cost_usd = float("-inf")


class SlottedGarbage(_Malformed):
    def result(self) -> Any:
        return _Slotted()


class Raises(_Malformed):
    def result(self) -> Any:
        raise ValueError("bad\nmulti-line\nmessage")


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("cannot print")


class RaisesUnprintable(_Malformed):
    def result(self) -> Any:
        raise _Unprintable()


#: agent class -> (status of its invocations, fragments its detail must hold)
CORPUS: dict[type[_Malformed], tuple[str, tuple[str, ...]]] = {
    ManyTokens: ("error", ("input_tokens='many'", "not a number")),
    NanCost: ("error", ("cost_usd=nan", "not a finite number")),
    InfiniteTokens: ("error", ("output_tokens=inf", "not a finite number")),
    NegativeCalls: ("error", ("model_calls=-5", "negative")),
    HugeTokens: ("error", ("input_tokens=", "above")),
    HugeCost: ("error", ("cost_usd=5000000.0", "above")),
    BoolCalls: ("error", ("model_calls=True", "not a number")),
    FractionalTokens: ("error", ("output_tokens=2.5", "not a whole number")),
    WeirdStatus: ("error", ("status 'weird'",)),
    StatusNumber: ("error", ("status 3",)),
    DetailObject: ("error", ("detail is a dict",)),
    AnswerText: ("error", ("returned a str instead of usage",)),
    ListReturn: ("error", ("returned a list instead of usage",)),
    NumberReturn: ("error", ("returned a int instead of usage",)),
    UnreadableMapping: ("error", ("cannot be read", "RuntimeError")),
    SlottedGarbage: ("error", ("input_tokens=-1", "cost_usd=-inf")),
    Raises: ("crash", ("raised ValueError at malformed_agents.py:",
                       ": bad multi-line message")),
    RaisesUnprintable: ("crash", ("raised _Unprintable at ", ": <unprintable message>")),
}
