"""`pytest-marathon manifests` and `pytest-marathon cluster`: the app on a real cluster."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_marathon.deploy.manifests import RULES_FORMATS, render, to_yaml


def register(subparsers: Any) -> None:
    """Add the `manifests` and `cluster` subcommands to the `pytest-marathon` parser."""
    manifests = subparsers.add_parser(
        "manifests", help="print the Kubernetes manifests of an application and its monitoring stack"
    )
    manifests.add_argument("--app", default="boutique", help="application (default boutique)")
    manifests.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    manifests.add_argument("--rules-format", choices=RULES_FORMATS, default=RULES_FORMATS[0],
                           help="the rule pack as a PrometheusRule (default) or a rule file in a ConfigMap")
    manifests.set_defaults(func=_manifests)
    from pytest_marathon.deploy.cluster_command import register_cluster

    register_cluster(subparsers)


def _manifests(args: argparse.Namespace) -> int:
    text = to_yaml(render(args.app, args.rules_format))
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0
