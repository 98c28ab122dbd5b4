"""`pytest-marathon keygen --out PREFIX`: the Ed25519 key pair that signs run bundles."""

from __future__ import annotations

import argparse

from .signing import PRIVATE_SUFFIX, PUBLIC_SUFFIX, generate_key_pair


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "keygen",
        help="create a key pair to sign run bundles",
        description=(
            f"Write a new Ed25519 key pair: PREFIX{PRIVATE_SUFFIX} (private, mode 0600; pass it "
            f"to --sign-key) and PREFIX{PUBLIC_SUFFIX} (public; pass it to --verify-key). "
            "Existing files are never overwritten."
        ),
    )
    parser.add_argument("--out", required=True, metavar="PREFIX", help="path prefix of the keys")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    private, public, identifier = generate_key_pair(args.out)  # KeyFileError: one line (cli.main)
    print(f"private key: {private} (keep it secret; --sign-key)")
    print(f"public key:  {public} (--verify-key)")
    print(f"key id:      {identifier}")
    return 0
