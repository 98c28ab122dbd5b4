"""`pytest-marathon agents`: what can be passed to `--agent`."""

from __future__ import annotations

import argparse

from pytest_marathon.agents.registry import list_agents


def _run(args: argparse.Namespace) -> int:
    rows = [
        *list_agents(),
        ("module:Class", "Any importable agent class (pytest-marathon docs agents)"),
        ('cmd:"<command>"', "Any program, run once per invocation with the tools over MCP"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, description in rows:
        print(f"{name:<{width}}  {description}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "agents", help="list the agents --agent accepts", description="List the agents --agent accepts."
    )
    parser.set_defaults(func=_run)
