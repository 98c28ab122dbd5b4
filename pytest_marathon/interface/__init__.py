"""The agent–system interface: 19 tools, the policy layer, MCP and in-process access, and the
external-process invocation protocol. See docs/internals.md ("Interface").

Nothing here imports `pytest_marathon.faults`: there is no path from an agent's tools to the
ground truth.
"""

from typing import Any

from pytest_marathon.interface.client import InProcessClient
from pytest_marathon.interface.invocation import ProcessOutcome, run_process_invocation
from pytest_marathon.interface.policy import PolicyConfig
from pytest_marathon.interface.session import ToolSession
from pytest_marathon.interface.tools import CATEGORIES, TOOLS

_MCP_EXPORTS = ("build_mcp_server", "serve_http")


def __getattr__(name: str) -> Any:
    """The MCP server loads on first use: in-process agents never pay for the SDK and uvicorn, and
    `python -m pytest_marathon.interface.mcp_server` does not find its module half-imported."""
    if name in _MCP_EXPORTS:
        from pytest_marathon.interface import mcp_server

        return getattr(mcp_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CATEGORIES",
    "TOOLS",
    "InProcessClient",
    "PolicyConfig",
    "ProcessOutcome",
    "ToolSession",
    "build_mcp_server",
    "run_process_invocation",
    "serve_http",
]
