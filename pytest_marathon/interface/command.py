"""`pytest-marathon mcp`: serve a warmed-up twin's tools over MCP."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the 19 agent tools of a warmed-up twin over MCP (stdio, or HTTP on loopback)",
        description="Serve the agent tools of a fresh, warmed-up twin over MCP.",
    )
    from pytest_marathon.interface.mcp_server import add_arguments

    add_arguments(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from pytest_marathon.interface.mcp_server import serve

    return serve(args.app, args.seed, args.http)
