"""The in-process client: Python agents call the tools with no transport in between."""

from __future__ import annotations

from typing import Any

from pytest_marathon.interface.session import ToolSession


class InProcessClient:
    """Same tools, schemas and answers as the MCP server: both delegate to one `ToolSession`."""

    def __init__(self, session: ToolSession) -> None:
        self._session = session

    def call(self, tool: str, /, **args: Any) -> dict[str, Any]:
        """Call `tool`; positional-only so that tool arguments may be named `name` too."""
        return self._session.call(tool, args)

    def list_tools(self) -> list[dict[str, Any]]:
        return self._session.list_tools()
