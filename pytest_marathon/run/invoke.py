"""Calling an agent once, under its wall-clock budget, without letting it stop the run.

An in-process agent cannot be killed, so it runs in a daemon thread: when the budget expires the
runner records `timeout`, revokes the tool handle the agent holds (later calls are refused, so a
late agent cannot act on a world that has moved on) and goes on. A crash ends that invocation
only. External agents enforce their own budget by killing their process.
"""

from __future__ import annotations

import math
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
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
STATUSES = ("ok", "timeout", "crash", "error")
#: Bounds past which a self-reported count is a bug, not a measurement: no invocation of a
#: 110-second budget reads a trillion tokens or spends a million dollars.
MAX_COUNT = 10**12
MAX_COST_USD = 1e6
_DETAIL_LIMIT = 500


def call_with_budget(
    invoke: Callable[[], Any], budget_s: float, *, agent: str = "agent"
) -> InvocationOutcome:
    """Run `invoke()` in a daemon thread; `timeout` after budget_s, `crash` on an exception.

    The agent may return usage (a mapping or an object with `model_calls`, `input_tokens`,
    `output_tokens`, `cost_usd`, and optionally `status`/`detail`); None means no model was used.
    Whatever it returns is validated (`_outcome_from_value`), so a malformed return ends that
    invocation as `error`, with a one-line detail naming `agent` and the field, instead of
    putting a value into the bundle that the scorer cannot read or JSON cannot hold.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = invoke()
        except BaseException as exc:  # noqa: BLE001 - any agent failure is that invocation's crash
            box["error"] = exc

    started = time.perf_counter()
    worker = threading.Thread(target=target, name="marathon-agent", daemon=True)
    worker.start()
    worker.join(budget_s)
    wall_s = time.perf_counter() - started
    if worker.is_alive():
        return InvocationOutcome("timeout", wall_s, f"exceeded the {budget_s:g} s budget")
    if "error" in box:
        return InvocationOutcome("crash", wall_s, _crash_detail(agent, box["error"]))
    return _outcome_from_value(box.get("value"), wall_s, agent)


def _crash_detail(agent: str, exc: BaseException) -> str:
    """`agent 'x' raised ValueError at file.py:12: msg` on one line: the innermost frame says
    where (before the message, so clipping a long message never hides it), and an exception
    whose `str()` itself fails still gets a line."""
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not stop the run
        message = "<unprintable message>"
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return _one_line(f"agent {agent!r} raised {type(exc).__name__}{where}: {message}")


def _outcome_from_value(value: Any, wall_s: float, agent: str = "agent") -> InvocationOutcome:
    """The invocation record's status, detail and usage from what the agent returned.

    Only finite, non-negative, plausibly sized numbers of the right type are kept; every field
    that is not is named in the detail and the invocation becomes `error` (its usage then holds
    only the valid fields). A return that is neither None, a mapping nor an object with
    attributes is an error too: an agent returning its answer text has a bug worth seeing."""
    if value is None:
        return InvocationOutcome("ok", wall_s)
    try:
        data = _fields_of(value)
        if data is None:
            kind = type(value).__name__
            return _invalid(agent, wall_s, {}, [f"returned a {kind} instead of usage "
                                                "(InvocationUsage, a mapping or None)"])
        usage: dict[str, Any] = {}
        problems = []
        for name in USAGE_FIELDS:
            raw = data.get(name)
            if raw is None:
                continue
            checked = _check_number(name, raw)
            if isinstance(checked, str):
                problems.append(checked)
            else:
                usage[name] = checked
        status = data.get("status")
        status = "ok" if status is None or status == "" else status
        if not isinstance(status, str) or status not in STATUSES:
            problems.append(f"status {_show(status)} is not one of {', '.join(STATUSES)}")
            status = "error"
        detail = data.get("detail")
        if detail is not None and not isinstance(detail, str):
            problems.append(f"detail is a {type(detail).__name__}, not a string")
            detail = None
    except Exception as exc:  # noqa: BLE001 - a return that cannot even be read is the agent's bug
        return _invalid(agent, wall_s, {}, [f"returned usage that cannot be read "
                                            f"({type(exc).__name__})"])
    if problems:
        return _invalid(agent, wall_s, usage, problems, detail or "")
    return InvocationOutcome(status, wall_s, (detail or "")[:_DETAIL_LIMIT], usage)


def _fields_of(value: Any) -> Mapping[str, Any] | None:
    """The fields of a returned usage: a mapping, a dataclass or an object's attributes."""
    if isinstance(value, Mapping):
        return value
    if isinstance(value, (str, bytes, int, float, list, tuple, set)):
        return None
    if hasattr(value, "__dict__"):
        return vars(value)
    slots = [name for cls in type(value).__mro__ for name in getattr(cls, "__slots__", ())]
    if slots:
        return {name: getattr(value, name, None) for name in slots}
    return None


def _check_number(name: str, raw: Any) -> int | float | str:
    """The field's value as the record keeps it, or a message naming what is wrong with it."""
    shown = f"{name}={_show(raw)}"
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return f"{shown} is a {type(raw).__name__}, not a number"
    if isinstance(raw, float) and not math.isfinite(raw):
        return f"{shown} is not a finite number"
    if raw < 0:
        return f"{shown} is negative"
    if name == "cost_usd":
        if raw > MAX_COST_USD:
            return f"{shown} is above the {MAX_COST_USD:g} USD an invocation can plausibly cost"
        return float(raw)
    if isinstance(raw, float) and not raw.is_integer():
        return f"{shown} is not a whole number"
    if raw > MAX_COUNT:
        return f"{shown} is above the {MAX_COUNT:.0e} an invocation can plausibly count"
    return int(raw)


def _invalid(
    agent: str, wall_s: float, usage: dict[str, Any], problems: list[str], detail: str = ""
) -> InvocationOutcome:
    line = f"agent {agent!r} returned invalid usage: " + "; ".join(problems)
    if detail:
        line += f" (its detail: {detail})"
    return InvocationOutcome("error", wall_s, _one_line(line), usage)


def _show(value: Any) -> str:
    """A short, safe rendering of a bad value for a detail line."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 40 else text[:37] + "..."


def _one_line(text: str) -> str:
    return " ".join(text.split())[:_DETAIL_LIMIT]
