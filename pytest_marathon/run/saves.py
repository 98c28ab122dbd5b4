"""`pytest-marathon run --save/--compare/--storage`: the plugin's saved runs, from the CLI.

The same storage folder and file format as `--marathon-save` / `--marathon-compare`, so a run
saved from pytest compares from the command line and back. Options are checked before the run
starts (a bad name or a missing save costs no marathon); the comparison table and a warning for
a run the save has no counterpart of are printed after it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

DEFAULT_STORAGE_DIR = Path(".marathon") / "saved"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--save", metavar="NAME", help="save the result as NAME in --storage")
    parser.add_argument(
        "--compare",
        nargs="?",
        const="latest",
        metavar="NAME",
        help="print the result beside a saved run (the newest if NAME is omitted)",
    )
    parser.add_argument(
        "--storage",
        type=Path,
        default=DEFAULT_STORAGE_DIR,
        metavar="DIR",
        help="folder of saved runs (default .marathon/saved, as --marathon-storage)",
    )


def check(args: argparse.Namespace) -> Any:
    """Validate before the run: the saved runs to compare with (or None); StorageError if bad."""
    from pytest_marathon.storage import check_save_name, load_saved

    if args.save is not None:
        check_save_name(args.save)
    return None if args.compare is None else load_saved(args.storage, args.compare)


def finish(
    args: argparse.Namespace, results: list[Any], saved: Any
) -> tuple[list[str], list[str]]:
    """Compare and save the finished runs (all seeds in one save): (stdout lines, warnings)."""
    from pytest_marathon.comparison import compare, no_counterpart_message
    from pytest_marathon.storage import save_runs

    lines, warnings = [], []
    if not results:
        return lines, warnings
    if saved is not None:
        comparison = compare(results, saved)
        lines += ["", f"compared with {saved.describe()}", comparison.text()]
        for result in results:
            unmatched = no_counterpart_message(result, saved)
            if unmatched is not None:
                warnings.append("warning: " + unmatched.removeprefix("--marathon-compare: "))
    if args.save is not None:
        lines.append(f"saved to {save_runs(args.storage, args.save, results, Path.cwd())}")
    return lines, warnings
