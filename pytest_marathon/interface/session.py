"""ToolSession: the one implementation behind every transport (in-process client, MCP).

It validates arguments against the published schemas, routes to the read, report and act
handlers, turns every failure into an answer (an agent never sees an exception or a traceback),
and records each call — every incident state a report changed, and each system change the agent
asked for, executed or found to be a no-op — through the sink exactly as the bundle streams
specify.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema

from pytest_marathon.backends.base import Backend, BackendError
from pytest_marathon.interface.actions import Actions, Outcome
from pytest_marathon.interface.incidents import IncidentStore
from pytest_marathon.interface.metrics import MetricsReader, PromQL
from pytest_marathon.interface.policy import Policy, PolicyConfig
from pytest_marathon.interface.reads import Reads, alert_id
from pytest_marathon.interface.shaping import dumps
from pytest_marathon.interface.tools import TOOLS, TOOLS_BY_NAME, ToolSpec
from pytest_marathon.interface.verdicts import BadArguments, ToolFailure

Sink = Callable[[str, dict[str, Any]], None]
AlertSource = Callable[[], list[dict[str, Any]]]

_VALIDATORS = {
    spec.name: jsonschema.Draft202012Validator(dict(spec.input_schema)) for spec in TOOLS
}


def _argument_error(spec: ToolSpec, args: Mapping[str, Any]) -> str | None:
    error = jsonschema.exceptions.best_match(_VALIDATORS[spec.name].iter_errors(args))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    if error.validator == "additionalProperties" and not where:
        allowed = ", ".join(spec.input_schema.get("properties", {})) or "none"
        return f"{spec.name}: {error.message}; accepted arguments: {allowed}"
    message = error.message if len(error.message) <= 300 else error.message[:300] + " …"
    return f"{spec.name}: argument {where or '(arguments)'}: {message}"


BETWEEN_INVOCATIONS = (
    "no invocation is open: the system is running between invocations; "
    "call again at the next invocation"
)


class ToolSession:
    def __init__(
        self,
        backend: Backend,
        *,
        alerts: AlertSource,
        sink: Sink | None = None,
        policy: PolicyConfig = PolicyConfig(),  # noqa: B008 - frozen dataclass, safe default
        promql: PromQL | None = None,
        mutation_cap: int | None = None,
    ) -> None:
        if mutation_cap is not None:
            policy = PolicyConfig(mutation_cap=mutation_cap)
        self.backend = backend
        self._alerts = alerts
        self._sink = sink
        self._incidents = IncidentStore()
        self._policy = Policy(backend, policy, self._incidents.__contains__)
        self._reads = Reads(backend, alerts, self._policy, MetricsReader(backend, promql))
        self._actions = Actions(backend, self._policy)
        self._handlers: dict[str, Callable[[Mapping[str, Any]], Outcome]] = {
            name: _as_outcome(handler) for name, handler in self._reads.handlers().items()
        }
        self._handlers.update(self._actions.handlers())
        self._handlers["report_incidents"] = self._report_incidents
        self.invocation = 0
        self._seq = 0
        self._counts = _zero_counts()
        # Calls and the invocation boundary take turns: a call in flight when the invocation ends
        # finishes first, and a call that arrives after the end (an MCP client the runner cannot
        # kill, a stray process) is refused instead of acting on a world that moves on.
        self._turn = threading.RLock()
        self._open = True

    @property
    def turn(self) -> threading.RLock:
        """The lock every call holds: whatever else touches the backend while calls may come
        (the runner stepping the twin, a served API) takes it too."""
        return self._turn

    # invocation protocol ----------------------------------------------------------------------
    def begin_invocation(self, n: int, t: float) -> None:
        """Start invocation n at virtual time t: fresh mutation cap and counters."""
        with self._turn:
            self.invocation = n
            self._policy.new_invocation()
            self._counts = _zero_counts()
            self._open = True

    def end_invocation(self) -> dict[str, int]:
        """This invocation's calls by kind: calls, reads, actions, reports. Until the next
        `begin_invocation`, every call is refused (and not recorded: nothing happened)."""
        with self._turn:
            self._open = False
            return dict(self._counts)

    def incidents(self) -> list[dict[str, Any]]:
        return self._incidents.records()

    def list_tools(self) -> list[dict[str, Any]]:
        return [spec.listing() for spec in TOOLS]

    # calls ---------------------------------------------------------------------------------------
    def call(self, name: str, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run one tool; never raises. The answer is plain JSON data (lists, dicts, str, numbers)."""
        return json.loads(self.call_json(name, args))

    def call_json(self, name: str, args: Mapping[str, Any] | None = None) -> str:
        """Run one tool and return its answer as canonical JSON text (what MCP transmits)."""
        with self._turn:
            if not self._open:
                return dumps(_failure(BETWEEN_INVOCATIONS, "refused").result)
            return self._call_json(name, args)

    def _call_json(self, name: str, args: Mapping[str, Any] | None) -> str:
        started = time.perf_counter()
        spec = TOOLS_BY_NAME.get(name) if isinstance(name, str) else None
        kind = spec.kind if spec else "read"
        shown_args = dict(args) if isinstance(args, Mapping) else {"_raw": repr(args)[:200]}
        outcome, verdict, error = self._run(spec, name, args)
        text = dumps(outcome.result)
        self._record(spec, name, kind, shown_args, outcome, verdict, error, len(text), started)
        return text

    def _run(self, spec: ToolSpec | None, name: Any, args: Any) -> tuple[Outcome, str, str | None]:
        try:
            if spec is None:
                known = ", ".join(s.name for s in TOOLS)
                raise BadArguments(f"unknown tool {str(name)[:100]!r}; tools: {known}")
            if args is None:
                args = {}
            if not isinstance(args, Mapping):
                raise BadArguments(f"{spec.name}: arguments must be a JSON object")
            problem = _argument_error(spec, args)
            if problem:
                raise BadArguments(problem)
            outcome = self._handlers[spec.name](args)
            dumps(outcome.result)  # an unserialisable answer is a failure here, not in a transport
        except ToolFailure as failure:
            return _failure(str(failure), failure.verdict), failure.verdict, str(failure)
        except BackendError as failure:
            return _failure(str(failure), "error"), "error", str(failure)
        except Exception as crash:  # noqa: BLE001 - an agent must never see a traceback
            message = f"{getattr(spec, 'name', name)} failed: {type(crash).__name__}: {crash}"[:500]
            return _failure(message, "error"), "error", message
        if outcome.failed is not None:
            return outcome, "error", outcome.failed
        return outcome, "ok", None

    def _report_incidents(self, args: Mapping[str, Any]) -> Outcome:
        known = [alert_id(a) for a in self._alerts()]
        done = self._incidents.upsert(args["incidents"], known_alert_ids=known, workloads=self.backend.workloads())
        # the incidents that only lost alerts are recorded too (not answered: `moves` says it)
        return Outcome(
            {"incidents": done.reported, "reported": len(done.reported), "moves": done.moves},
            reports=done.reported + done.moved_from,
        )

    # recording ----------------------------------------------------------------------------------
    def _record(
        self,
        spec: ToolSpec | None,
        name: Any,
        kind: str,
        args: dict[str, Any],
        outcome: Outcome,
        verdict: str,
        error: str | None,
        result_chars: int,
        started: float,
    ) -> None:
        self._seq += 1
        self._counts["calls"] += 1
        self._counts[{"read": "reads", "report": "reports", "act": "actions"}[kind]] += 1
        if self._sink is None:
            return
        t = float(self.backend.now)
        base = {"t": t, "invocation": self.invocation, "seq": self._seq}
        wall_ms = round((time.perf_counter() - started) * 1000.0, 3)
        self._sink(
            "tool_calls",
            {
                **base,
                "tool": str(name)[:100],
                "kind": kind,
                "args": json.loads(dumps(args)) if _jsonable(args) else {"_raw": repr(args)[:500]},
                "verdict": verdict,
                "error": error,
                "result_chars": result_chars,
                "wall_ms": wall_ms,
            },
        )
        if verdict == "ok":
            # `item`: the record's place in the call, the scorer's tie-break before incident ids
            # (two incidents first holding a fault's alerts in one call are told apart by it)
            for item, incident in enumerate(outcome.reports):
                self._sink("reports", {**base, "item": item, **incident})
        if outcome.intervention is not None:
            self._sink("interventions", {**base, **outcome.intervention.record()})


def _zero_counts() -> dict[str, int]:
    return {"calls": 0, "reads": 0, "actions": 0, "reports": 0}


def _failure(message: str, verdict: str) -> Outcome:
    return Outcome({"error": message, "verdict": verdict})


def _as_outcome(handler: Callable[[Mapping[str, Any]], dict[str, Any]]) -> Callable[[Mapping[str, Any]], Outcome]:
    return lambda args: Outcome(handler(args))


def _jsonable(value: Any) -> bool:
    try:
        dumps(value)
    except (TypeError, ValueError):
        return False
    return True
