"""The `pytest-marathon` command line: one parser, subcommands contributed by each package."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from pytest_marathon import RELEASE
from pytest_marathon.run import command as run_command

_PACKAGE_COMMANDS = (
    "pytest_marathon.alerting.command",
    "pytest_marathon.faults.command",
    "pytest_marathon.scoring.command",
    "pytest_marathon.bundle.command",
    "pytest_marathon.interface.command",
    "pytest_marathon.agents.command",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pytest-marathon",
        description="Continuous fault marathons for autonomous SRE agents.",
    )
    parser.add_argument("--version", action="version", version=RELEASE)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    run_command.register(subparsers)
    for name in _PACKAGE_COMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
