"""A `cmd:` intruder: the rollback agent, then every attack of tests/intruders/attacks.py (after,
because planting links replaces the alert file the agent reads).

A leak ends the invocation with exit status 3 and the leaks on stderr (a `crash` in the bundle).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from intruders.attacks import attempt  # noqa: E402
from rollback_over_mcp import main  # noqa: E402

if __name__ == "__main__":
    main()
    leaks = attempt()
    if leaks:
        print("leaked: " + ", ".join(leaks), file=sys.stderr)
        sys.exit(3)
