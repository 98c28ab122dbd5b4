"""Running Orbit's tool calls through the write-ahead ledger, and recovering from a dead process.

Paper, Appendix G, Orbit: Orbit reloads "a durable action ledger from its workspace. An action that
succeeded while the previous process died is folded back into its incident first."

Every act tool call is logged as an `intent` (with a fingerprint of what it targets) before it runs
and as an `outcome` after. An intent with no outcome at the next invocation means the process died
in between; whether the action took effect is read back from the system, since the tool answer was
lost: the target deployment's `metadata.generation` (Kubernetes bumps it on every spec change, so a
restart, rollback, config update, patch release or scaling changes it; scaling must also show the
requested replica count) or the feature-flag configmap's data. An action that took effect is folded
into its incident as `ok` and marked `recovered`; one that did not is recorded as not applied. A
release made by someone else between the two reads would be mistaken for the action: the ledger
cannot tell them apart, and says `inferred` in the record.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pytest_marathon.agents.orbit_state import OrbitState
from pytest_marathon.agents.protocol import ToolClient
from pytest_marathon.agents.tooling import ToolOutcome, call_tool

from pytest_marathon.interface.tools import MUTATING_TOOLS, TOOLS_BY_NAME

FLAGS_CONFIGMAP = "feature-flags"


def is_act(tool: str) -> bool:
    spec = TOOLS_BY_NAME.get(tool)
    return spec is not None and spec.kind == "act"


def _find(node: Any, key: str) -> Any:
    """The first value of `key` in a nested answer (objects may come wrapped)."""
    stack = [node]
    while stack:
        current = stack.pop(0)
        if isinstance(current, Mapping):
            if key in current:
                return current[key]
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return None


def fingerprint(tools: ToolClient, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the action will change, read now; None when there is nothing to compare."""
    if tool not in MUTATING_TOOLS:
        return None
    if tool == "set_feature_flag":
        outcome = call_tool(tools, "get_resources", kind="configmaps", name=FLAGS_CONFIGMAP)
        data = _find(outcome.result, "data") if outcome.ok else None
        digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
        return {"flags": digest}
    service = arguments.get("service")
    if not isinstance(service, str):
        return None
    outcome = call_tool(tools, "get_resources", kind="deployments", name=service)
    if not outcome.ok:
        return None
    obj = outcome.result.get("object", outcome.result)
    return {
        "generation": _find(obj.get("metadata", {}), "generation"),
        "replicas": _find(obj.get("spec", {}), "replicas"),
    }


def took_effect(intent: Mapping[str, Any], now: Mapping[str, Any] | None) -> bool:
    before = intent.get("fingerprint")
    if not before or not now:
        return False
    if intent["tool"] == "scale_service":
        return now.get("replicas") == intent["arguments"].get("replicas") and now != before
    return now != before


def fold(state: OrbitState, incident_id: str, action: dict[str, Any]) -> None:
    incident = state.incident(incident_id)
    if incident is not None:
        incident.setdefault("actions", []).append(action)


def recover(state: OrbitState, tools: ToolClient) -> list[dict[str, Any]]:
    """Settle every intent the previous process left without an outcome; returns the recoveries."""
    recovered = []
    for intent in state.pending_intents():
        if intent["tool"] in MUTATING_TOOLS:
            applied = took_effect(intent, fingerprint(tools, intent["tool"], intent["arguments"]))
        else:
            applied = False  # a patch step changes no running system; it is simply redone
        event = {"event": "recovered", "action_id": intent["action_id"], "n": state.n, "applied": applied,
                 "how": "inferred from the target's state"}
        state.log(event)
        fold(state, intent["incident"], {
            "action_id": intent["action_id"], "tool": intent["tool"], "arguments": intent["arguments"],
            "n": intent["n"], "ok": applied, "recovered": True, "error": "" if applied else "not applied",
        })
        recovered.append({**event, "tool": intent["tool"], "incident": intent["incident"]})
    return recovered


def run_action(
    state: OrbitState, tools: ToolClient, tool: str, arguments: dict[str, Any], incident_id: str, task: str
) -> ToolOutcome:
    """Run one act tool under the write-ahead ledger and fold its outcome into the incident."""
    action_id = state.next_id("action", "act")
    state.log({
        "event": "intent", "action_id": action_id, "n": state.n, "tool": tool, "arguments": arguments,
        "incident": incident_id, "task": task, "fingerprint": fingerprint(tools, tool, arguments),
    })
    outcome = call_tool(tools, tool, **arguments)
    changed = outcome.result.get("changed")
    state.log({"event": "outcome", "action_id": action_id, "n": state.n, "ok": outcome.ok,
               "changed": changed, "error": outcome.error[:500]})
    fold(state, incident_id, {"action_id": action_id, "tool": tool, "arguments": arguments, "n": state.n,
                              "ok": outcome.ok and changed is not False, "error": outcome.error[:500]})
    return outcome
