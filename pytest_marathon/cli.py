"""The `pytest-marathon` command line: one parser, subcommands contributed by each package."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from pytest_marathon import RELEASE
from pytest_marathon.run import command as run_command
from pytest_marathon.run.stopping import held_while_starting, stopped_while_starting

_PACKAGE_COMMANDS = (
    "pytest_marathon.alerting.command",
    "pytest_marathon.faults.command",
    "pytest_marathon.scoring.command",
    "pytest_marathon.bundle.command",
    "pytest_marathon.run.mcp_command",
    "pytest_marathon.agents.command",
    "pytest_marathon.docs_command",
    "pytest_marathon.apiserver.command",
    "pytest_marathon.deploy.command",
    "pytest_marathon.episodic.command",
)


#: Set to show the full traceback of an error the command line reports in one line.
TRACEBACK_ENV = "MARATHON_TRACEBACK"


def build_parser(prog: str = "pytest-marathon") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
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


def main(argv: Sequence[str] | None = None, prog: str = "pytest-marathon") -> int:
    """Run one subcommand. An error the user can fix (a bad value, a port in use, a folder that
    cannot be written) is one line, `pytest-marathon: error: ...`, exit 2, as argparse reports bad usage;
    a bug still shows its traceback, and `MARATHON_TRACEBACK=1` shows it for every error."""
    from pytest_marathon.backends.base import BackendError
    from pytest_marathon.bundle import BundleError

    try:
        with held_while_starting() as starting:  # no signal raised inside an import
            parser = build_parser(prog)
            args = parser.parse_args(list(argv) if argv is not None else None)
        if starting.pending is not None:
            return stopped_while_starting(starting.pending)
        return int(args.func(args))
    except (ValueError, OSError, BundleError, BackendError) as exc:
        if os.environ.get(TRACEBACK_ENV):
            raise
        print(f"pytest-marathon: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line and the shell's code for it, no traceback
        if os.environ.get(TRACEBACK_ENV):
            raise
        print("pytest-marathon: interrupted (SIGINT)", file=sys.stderr)
        return 130


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:  # without the "[Errno N]" prefix
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    first, *rest = str(exc).strip().splitlines() or [type(exc).__name__]
    return "\n".join([" ".join(first.split()), *rest])  # a list of problems keeps its lines


if __name__ == "__main__":
    sys.exit(main())
