"""Calling an agent once, under its wall-clock budget, without letting it stop the run.

An in-process agent cannot be killed, so it runs in a daemon thread: when the budget expires the
runner records `timeout`, revokes the tool handle the agent holds (later calls are refused, so a
late agent cannot act on a world that has moved on) and goes on. A crash ends that invocation
only. External agents enforce their own budget by killing their process.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class InvocationExpired(RuntimeError):
    """Raised to an agent that calls a tool after its invocation ended (budget exceeded)."""


class RevocableTools:
    """Forwards to the tools client until revoked; afterwards every tool call is refused."""

    def __init__(self, client: Any, n: int) -> None:
        self._client = client
        self._n = n
        self._revoked = threading.Event()

    def revoke(self) -> None:
        self._revoked.set()

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._client, name)
        if not callable(target):
            return target

        def guarded(*args: Any, **kwargs: Any) -> Any:
            if self._revoked.is_set():
                raise InvocationExpired(
                    f"invocation {self._n} is over (its wall-clock budget expired); "
                    f"tool call {name!r} refused"
                )
            return target(*args, **kwargs)

        return guarded


@dataclass
class InvocationOutcome:
    """How an invocation ended and what it cost; becomes one `invocations.jsonl` record."""

    status: str
    wall_s: float
    detail: str = ""
    usage: Mapping[str, Any] = field(default_factory=dict)


USAGE_FIELDS = ("model_calls", "input_tokens", "output_tokens", "cost_usd")


def call_with_budget(invoke: Callable[[], Any], budget_s: float) -> InvocationOutcome:
    """Run `invoke()` in a daemon thread; `timeout` after budget_s, `crash` on an exception.

    The agent may return usage (a mapping or an object with `model_calls`, `input_tokens`,
    `output_tokens`, `cost_usd`, and optionally `status`/`detail`); None means no model was used.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = invoke()
        except BaseException as exc:  # noqa: BLE001 - any agent failure is that invocation's crash
            box["error"] = exc
            box["trace"] = traceback.format_exc(limit=5)

    started = time.perf_counter()
    worker = threading.Thread(target=target, name="marathon-agent", daemon=True)
    worker.start()
    worker.join(budget_s)
    wall_s = time.perf_counter() - started
    if worker.is_alive():
        return InvocationOutcome("timeout", wall_s, f"exceeded the {budget_s:g} s budget")
    if "error" in box:
        exc = box["error"]
        return InvocationOutcome("crash", wall_s, f"{type(exc).__name__}: {exc}"[:500])
    return _outcome_from_value(box.get("value"), wall_s)


def _outcome_from_value(value: Any, wall_s: float) -> InvocationOutcome:
    if value is None:
        return InvocationOutcome("ok", wall_s)
    data = value if isinstance(value, Mapping) else vars(value) if hasattr(value, "__dict__") else {}
    usage = {name: data[name] for name in USAGE_FIELDS if data.get(name) is not None}
    status = str(data.get("status") or "ok")
    if status not in ("ok", "timeout", "crash", "error"):
        status = "error"
    return InvocationOutcome(status, wall_s, str(data.get("detail") or "")[:500], usage)
