"""`python -m pytest_marathon`: the same command line as the `pytest-marathon` script."""

from __future__ import annotations

import sys

from pytest_marathon.cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m pytest_marathon"))
