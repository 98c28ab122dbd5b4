"""`pytest-marathon mcp`: the agent tools over MCP, on a warmed-up twin frozen at t = 0 or on a
live marathon at a chosen speed (`--speed`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pytest_marathon.config import DEFAULT_SCENARIO


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the 19 agent tools over MCP: a warmed-up twin, or a live marathon (--speed)",
        description="Serve the agent tools over MCP (stdio, or streamable HTTP on loopback). "
        "Without --speed: a fresh twin warmed up to t = 0, standing still. With --speed: a live "
        "marathon whose world pauses at each invocation for Δ/speed wall seconds while the "
        "connected client acts; the bundle is sealed and scored at the end.",
    )
    from pytest_marathon.interface.mcp_server import add_arguments

    add_arguments(parser)
    parser.add_argument(
        "--speed",
        type=float,
        metavar="X",
        help="run a live marathon: each invocation's window is 120/X wall seconds (needs --http)",
    )
    parser.add_argument(
        "--scenario",
        default=DEFAULT_SCENARIO,
        help=f"scenario of the live marathon (default {DEFAULT_SCENARIO}; with --speed)",
    )
    parser.add_argument(
        "--out", default="marathon-bundles", help="bundle folder of the live marathon (with --speed)"
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from pytest_marathon.interface.mcp_server import serve

    if args.speed is None:
        return serve(args.app, args.seed, args.http)
    if args.http is None:
        raise ValueError("--speed needs --http PORT: a live marathon is served over HTTP")
    from pytest_marathon.run.command import summary
    from pytest_marathon.run.live import serve_live
    from pytest_marathon.runner import MarathonInterrupted

    try:
        result = serve_live(args.app, args.seed, args.scenario, args.speed, args.http, args.out)
    except MarathonInterrupted as stop:
        print(f"pytest-marathon: {stop}", file=sys.stderr)
        return stop.exit_code
    print(summary(result))
    return 0
