"""The agent–system interface: 19 tools, the policy layer, MCP and in-process access, and the
external-process invocation protocol. See docs/internals.md ("Interface").

Nothing here imports `pytest_marathon.faults`: there is no path from an agent's tools to the
ground truth.
"""

from pytest_marathon.interface.client import InProcessClient
from pytest_marathon.interface.invocation import ProcessOutcome, run_process_invocation
from pytest_marathon.interface.mcp_server import build_mcp_server, serve_http
from pytest_marathon.interface.policy import PolicyConfig
from pytest_marathon.interface.session import ToolSession
from pytest_marathon.interface.tools import CATEGORIES, TOOLS

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
