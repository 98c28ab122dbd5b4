"""How fast admission validation runs: entries per minute, serial and on 2 processes.

Run: `python benchmarks/admission_speed.py [N]` (default 8 entries, a mix of mechanisms). Prints
the wall time per entry, the virtual seconds simulated per wall second, the speed-up of two
worker processes over one, and the projected time for the whole catalog on 2 cores.
"""

from __future__ import annotations

import sys
import time

from pytest_marathon.faults.admission import (
    RECOVERY,
    REMEDY_AFTER,
    REMEDY_GRACE,
    WARMUP,
    WINDOW,
    validate_catalog,
)
from pytest_marathon.faults.catalog import load_catalog


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    catalog = load_catalog("boutique")
    step = max(1, len(catalog) // n)
    sample = catalog.only([e.id for e in list(catalog)[::step][:n]])
    virtual = WARMUP + 2 * WINDOW + RECOVERY + REMEDY_AFTER + REMEDY_GRACE
    timings = {}
    for workers in (1, 2):
        start = time.perf_counter()
        validate_catalog(sample, workers=workers)
        timings[workers] = time.perf_counter() - start
    per_entry = timings[1] / len(sample)
    print(f"entries: {len(sample)}; virtual seconds per entry: {virtual:.0f}")
    print(f"serial: {per_entry:.2f} s/entry, {virtual / per_entry:.0f} virtual s per wall s")
    print(f"2 workers: {timings[2] / len(sample):.2f} s/entry; speed-up {timings[1] / timings[2]:.2f}x")
    whole = timings[2] / len(sample) * len(catalog)
    print(f"projected whole catalog ({len(catalog)} entries) on 2 workers: {whole / 60:.1f} min")


if __name__ == "__main__":
    main()
