"""The tools over MCP (the `mcp` SDK 2.x): stdio for a standalone twin, streamable HTTP on
loopback for a run that exposes its live session to an external agent.

The server lists the registry's schemas verbatim and hands every call to the session, so MCP adds
transport and nothing else: argument checking, policy and recording stay in one place, and an
answer over MCP is byte-for-byte the answer of the in-process client.
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent
from mcp_types import Tool as MCPTool

from pytest_marathon.interface.session import ToolSession
from pytest_marathon.interface.tools import TOOLS

SERVER_NAME = "pytest-marathon"
INSTRUCTIONS = (
    "You operate a live microservice application as its SRE. Read alerts and telemetry, group "
    "alerts into incidents with report_incidents, diagnose root causes, and repair through the act "
    "tools; every act tool must cite an incident you reported. Times are virtual seconds."
)


class MarathonMCPServer(MCPServer):
    """An MCPServer whose tools are the session's registry instead of decorated functions."""

    def __init__(self, session: ToolSession) -> None:
        super().__init__(SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING")
        self._session = session
        self._lock = threading.Lock()

    async def list_tools(self) -> list[MCPTool]:
        return [
            MCPTool(name=spec.name, description=spec.description, input_schema=dict(spec.input_schema))
            for spec in TOOLS
        ]

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        spec = next((s for s in TOOLS if s.name == name), None)
        return None if spec is None else dict(spec.input_schema)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> CallToolResult:
        with self._lock:
            text = self._session.call_json(name, arguments)
        answer = json.loads(text)
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=answer,
            is_error="error" in answer,
        )


def build_mcp_server(session: ToolSession) -> MCPServer:
    return MarathonMCPServer(session)


class HttpServer:
    """A streamable-HTTP MCP endpoint on 127.0.0.1 served from a daemon thread.

    Use as a context manager (yields the URL) or keep the handle: `.url`, `.close()`. `server`
    serves another tool set over the same transport (an episode's ACI) instead of the session's.
    """

    def __init__(self, session: ToolSession | None, port: int = 0, *, server: MCPServer | None = None) -> None:
        if server is None:
            if session is None:
                raise ValueError("HttpServer needs a session or a server")
            server = build_mcp_server(session)
        app = server.streamable_http_app(host="127.0.0.1")
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind(("127.0.0.1", port))
        except OSError as exc:
            self._socket.close()
            raise OSError(exc.errno, f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from None
        host, bound = self._socket.getsockname()
        self.url = f"http://{host}:{bound}/mcp"
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="marathon-mcp-http", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10.0
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self._server.started:
            self.close()
            raise RuntimeError(f"MCP HTTP server did not start on {self.url}")

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10.0)
        self._socket.close()

    def __enter__(self) -> str:
        return self.url

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_http(session: ToolSession, port: int = 0) -> HttpServer:
    """Expose a live session on loopback; `with serve_http(s) as url:` or keep the handle."""
    return HttpServer(session, port)


def serve(app: str, seed: int, http_port: int | None = None) -> int:
    """Serve a warmed-up twin until the client disconnects (stdio) or the process is stopped."""
    from pytest_marathon.interface.standalone import standalone_session

    session = standalone_session(app, seed)
    if http_port is None:
        build_mcp_server(session).run("stdio")
        return 0
    with serve_http(session, http_port) as url:
        print(f"serving MCP on {url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_marathon.interface.mcp_server")
    add_arguments(parser)
    args = parser.parse_args(argv)
    return serve(args.app, args.seed, args.http)


def tcp_port(text: str) -> int:
    """A port argparse can check: 0 (any free port) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is outside 0-65535")
    return port


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from pytest_marathon.config import available_apps

    parser.add_argument(
        "--app", default="boutique", choices=available_apps(), help="application twin to serve"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the twin (default 0)")
    parser.add_argument(
        "--http",
        type=tcp_port,
        metavar="PORT",
        help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio (0: any free port)",
    )


if __name__ == "__main__":
    raise SystemExit(main())
