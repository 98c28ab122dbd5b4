"""Re-record a sealed bundle with some records changed or dropped, as anyone can without a key.

Every digest of the copy is right again, which is the point: tests use it to show what a plain
digest cannot catch (a forged stream) and what the scorer reads (a record left out).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_marathon.bundle import STREAMS, Recorder, read_bundle
from pytest_marathon.bundle.format import RECORDER_FIELDS

Edit = Callable[[str, dict[str, Any]], dict[str, Any] | None]


def rerecord(source: Path, target: Path, edit: Edit) -> Path:
    """A new sealed, unsigned bundle of source's records: `edit(stream, record)` returns the
    record to write (changed or not) or None to drop it."""
    original = read_bundle(source)
    manifest = {k: v for k, v in original.manifest.items() if k not in RECORDER_FIELDS}
    with Recorder(target, manifest) as recorder:
        for stream in STREAMS:
            for record in original.stream(stream):
                kept = edit(stream, json.loads(json.dumps(record)))
                if kept is not None:
                    recorder.append(stream, kept)
    return target
