"""The scripted model of an episode played by a CLI agent over MCP: an engineer behind the
episode's ACI tools. Per conversation:

1. `exec_shell` with `kubectl get pods -n <namespace>` (the namespace the task names);
2. `submit` with "Yes" when a pod the listing shows is not Running or has restarted, "No"
   otherwise (a detection answer read from the observation, so a listing that does not reach
   the model shows up as a wrong answer);
3. a short text once `submit` was answered.

Tools are called as `SreScript` calls them: directly when the client lists them, or from Codex's
code mode (`ALL_TOOLS` discovery first). A refused call ends the conversation with a text quoting it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .conversation import Conversation, ToolResult
from .script import (
    CODE_TOOL,
    Text,
    Turn,
    call_tool,
    json_values,
    steps_of,
    tool_names,
    wait_for_mcp,
)

EPISODE_TOOLS = ("exec_shell", "submit")


@dataclass
class EpisodeScript:
    observations: list[str] = field(default_factory=list)

    def __call__(self, conv: Conversation) -> Turn:
        texts = "\n".join([conv.system, *conv.user_texts])
        namespace = re.search(r"Namespace: (\S+)", texts)
        if namespace is None:
            return Text("OK")  # a side request (a title, a quota check): not the task
        if conv.tool_named("exec_shell") is None and CODE_TOOL not in conv.custom_tools:
            return wait_for_mcp(conv, 3) or Text("I cannot reach the episode's tools.")
        steps = steps_of(conv, EPISODE_TOOLS)
        for step in steps:
            if step.short in EPISODE_TOOLS and step.call.result is not None and _failed(step.call):
                return Text(f"The tool call {step.short} failed: {step.call.result[:400]}")
        names = tool_names(conv, steps, EPISODE_TOOLS)
        if not isinstance(names, dict):
            return names
        done = {step.short: step.call for step in steps}
        if "exec_shell" not in done:
            return call_tool(conv, names, "exec_shell", {"command": f"kubectl get pods -n {namespace.group(1)}"})
        if "submit" not in done:
            listing = done["exec_shell"].result or ""
            self.observations.append(listing)
            rows = [line.split() for line in listing.replace("\\n", "\n").splitlines() if "/" in line]
            troubled = any(len(r) >= 4 and (r[2] != "Running" or r[3] != "0") for r in rows)
            return call_tool(conv, names, "submit", {"solution": "Yes" if troubled else "No"})
        return Text("Submitted.")


def _failed(call: ToolResult) -> bool:
    """The ACI answers in text; a failure is an MCP error result (`isError`), as the episode's
    server marks refused commands and calls after the episode ended."""
    return call.is_error or any(isinstance(v, dict) and v.get("isError") is True for v in json_values(call.result or ""))
