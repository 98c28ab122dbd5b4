"""`pytest-marathon score BUNDLE [--noop BUNDLE] [--baseline-cache DIR] [--json] [--allow-incomplete]
[--verify-key FILE] [--seed-salt SALT]`.

Without `--noop` the run's no-action bundle is looked up where `run` caches it (the same
`--baseline-cache`, keyed by what the scorer's baseline rule compares), so the degradation and
the self-recovery check of Repaired are the ones the run reported; when there is none, the
scorer says what it could not check."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..bundle import BundleError, KeyFileError, load_public_key, read_bundle
from .baseline_cache import DEFAULT_CACHE_DIR, cached_baseline
from .degradation import NOOP_AGENT
from .evidence import ScoreRefusal
from .scorer import score_bundle
from .table import render_table

EXIT_REFUSED = 2


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "score",
        help="score a run bundle offline",
        description="Compute every SRE-Marathon metric from a sealed run bundle.",
    )
    parser.add_argument("bundle", metavar="BUNDLE", help="run bundle directory")
    parser.add_argument(
        "--noop", metavar="BUNDLE", help="no-action bundle of the same release/app/scenario/seed"
    )
    parser.add_argument(
        "--baseline-cache", metavar="DIR", type=Path, default=DEFAULT_CACHE_DIR,
        help=f"where `run` cached no-action bundles, looked in when --noop is not given "
        f"(default {DEFAULT_CACHE_DIR})",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the documented JSON (pytest-marathon docs score-json)"
    )
    parser.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="score a bundle whose run was interrupted",
    )
    parser.add_argument(
        "--verify-key",
        metavar="FILE",
        help="Ed25519 public key (pytest-marathon keygen): refuse the bundle, and the --noop "
        "bundle, unless signed by it",
    )
    parser.add_argument(
        "--seed-salt",
        metavar="SALT",
        help="the session's seed salt of a salted run that was killed (its schedule is redrawn "
        "with it); checked against the bundle's commitment. Not read from MARATHON_SEED_SALT",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        verify_key = None if args.verify_key is None else load_public_key(args.verify_key)
    except KeyFileError as exc:
        print(f"pytest-marathon: error: --verify-key: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    noop = args.noop
    if noop is None:
        noop = _cached_baseline(args.bundle, args.baseline_cache)
        if noop is not None:
            print(f"no-action bundle: {noop} (from the baseline cache)", file=sys.stderr)
    try:
        result = score_bundle(
            args.bundle,
            noop=noop,
            allow_incomplete=args.allow_incomplete,
            verify_key=verify_key,
            seed_salt=args.seed_salt,
        )
    except (BundleError, ScoreRefusal) as refusal:
        print(f"pytest-marathon: error: bundle refused: {refusal}", file=sys.stderr)
        return EXIT_REFUSED
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        sys.stdout.write(render_table(result))
    return 0


def _cached_baseline(bundle: str, cache_dir: Path) -> Path | None:
    """The cached no-action bundle of this run's identity, if `run` left a sealed one there."""
    try:
        manifest = read_bundle(bundle, allow_incomplete=True).manifest
    except (BundleError, OSError):
        return None  # scoring names what is wrong with the bundle itself
    return None if manifest.get("agent") == NOOP_AGENT else cached_baseline(manifest, cache_dir)
