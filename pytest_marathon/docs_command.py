"""`pytest-marathon docs [NAME]`: the shipped documentation pages, listed or printed.

Messages and `--help` texts point at these pages by name; shipping them in the wheel means the
page a user is sent to is the one of the release they run, even with no network.
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from typing import Any


def pages() -> dict[str, str]:
    """Page name (file stem) -> first heading, for every shipped page."""
    root = resources.files("pytest_marathon.docs")
    found = {}
    for item in sorted(root.iterdir(), key=lambda p: p.name):
        if item.name.endswith(".md"):
            text = item.read_text(encoding="utf-8")
            heading = next((line.lstrip("# ").strip() for line in text.splitlines()
                            if line.startswith("#")), "")
            found[item.name[: -len(".md")]] = heading
    return found


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "docs",
        help="list the documentation pages, or print one (pytest-marathon docs score-json)",
        description="The documentation shipped with this release.",
    )
    parser.add_argument("name", nargs="?", help="page to print (without .md); none: list them")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    known = pages()
    if args.name is None:
        width = max(map(len, known), default=4)
        for name, heading in known.items():
            print(f"{name:<{width}}  {heading}")
        return 0
    name = args.name.removesuffix(".md").removeprefix("docs/")
    if name not in known:
        raise ValueError(f"no documentation page {args.name!r}; pages: {', '.join(known)}")
    sys.stdout.write(resources.files("pytest_marathon.docs").joinpath(f"{name}.md").read_text(
        encoding="utf-8"))
    return 0
