"""Baseline agents and the agent protocol (installed as pytest_marathon.agents).

The contract (docs/internals.md, "Agents"): an agent has `name`, `description`, optionally
`needs_ground_truth` (oracle) and `needs_mcp` (external programs), and `invoke(ctx)`.
"""

from pytest_marathon.agents.protocol import (
    Agent,
    InvocationContext,
    InvocationUsage,
    TaskBrief,
    ToolClient,
    wants_ground_truth,
)
from pytest_marathon.agents.registry import ENTRY_POINT_GROUP, list_agents, resolve_agent

__all__ = [
    "ENTRY_POINT_GROUP",
    "Agent",
    "InvocationContext",
    "InvocationUsage",
    "TaskBrief",
    "ToolClient",
    "list_agents",
    "resolve_agent",
    "wants_ground_truth",
]
