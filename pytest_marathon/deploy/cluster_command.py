"""`pytest-marathon cluster up|down`: a Kind cluster of the paper's shape running the app."""

from __future__ import annotations

import argparse
from typing import Any

from pytest_marathon.deploy.cluster import DEFAULT_NAME, down, up


def register_cluster(subparsers: Any) -> None:
    cluster = subparsers.add_parser("cluster", help="create (or reuse) a cluster running an application, or delete it")
    cluster.add_argument("action", choices=("up", "down"), help="up: create (or reuse) and deploy; down: delete")
    cluster.add_argument("--app", default="boutique", help="application (default boutique)")
    cluster.add_argument("--name", default=DEFAULT_NAME, help=f"Kind cluster name (default {DEFAULT_NAME})")
    cluster.add_argument("--context", help="deploy to this existing kubeconfig context instead of creating a cluster")
    cluster.set_defaults(func=_cluster)


def _cluster(args: argparse.Namespace) -> int:
    if args.action == "down":
        if args.context:
            raise ValueError("`cluster down` deletes a Kind cluster by --name; a reused --context is left as it is")
        down(name=args.name)
        print(f"deleted Kind cluster {args.name}")
        return 0
    print(up(args.app, name=args.name, context=args.context))
    return 0
