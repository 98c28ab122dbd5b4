"""`pytest-marathon rules`: list or export an application's alert rule pack."""

from __future__ import annotations

import argparse
from typing import Any

from pytest_marathon.alerting.export import export_pack
from pytest_marathon.alerting.rules import load_rule_pack


def register(subparsers: Any) -> None:
    """Add the `rules` subcommand to the `pytest-marathon` parser."""
    rules = subparsers.add_parser(
        "rules", help="list or export the Prometheus alert rule pack of an application"
    )
    rules.add_argument("--app", required=True, help="application (e.g. boutique)")
    action = rules.add_mutually_exclusive_group(required=True)
    action.add_argument("--export", metavar="DIR", help="write the pack as a Prometheus rule file")
    action.add_argument("--list", action="store_true", help="print one line per rule")
    rules.set_defaults(func=_rules)


def _rules(args: argparse.Namespace) -> int:
    pack = load_rule_pack(args.app)  # RuleFileError: one line (cli.main)
    if args.list:
        for rule in pack.rules:
            severity = rule.labels.get("severity", "-")
            print(f"{rule.group:<22} {rule.name:<36} for={rule.for_:>4g}s  {severity}")
        print(f"{len(pack.rules)} rules in {len(pack.groups)} groups ({pack.source})")
        return 0
    try:
        path = export_pack(pack, args.export)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot export to {args.export}: {exc.strerror or exc}") from None
    print(f"wrote {len(pack.rules)} rules to {path}")
    return 0
