"""The on-disk bundle format shared by the recorder and the reader.

Both sides must agree byte for byte on how a record becomes a line and how the
`content_digest` is formed, otherwise a bundle would fail its own verification; keeping the
rules here (and only here) makes that agreement structural.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

#: 2: the scorer's definitions changed (scorer version 2) and interventions carry `changed` and
#: `targets`; the manifest records the run configuration with its digests; bundles may be signed.
#: 3: a held `releases` stream (every release the pipeline made and why; ground truth).
SCHEMA_VERSION = 3
SUPPORTED_SCHEMA_VERSIONS = (3,)
MANIFEST = "manifest.json"
#: Detached Ed25519 signature over the exact bytes of the final manifest (bundle/signing.py).
SIGNATURE = "signature.json"

#: Every stream a bundle holds, in the fixed order the content digest uses.
STREAMS = (
    "schedule",
    "releases",
    "alerts",
    "reports",
    "tool_calls",
    "interventions",
    "probes",
    "sli",
    "invocations",
)
#: Streams that are a pure function of (release, app, scenario, seed, agent decisions);
#: `invocations` carries wall time and token counts, so it is left out.
DETERMINISTIC_STREAMS = STREAMS[:-1]

REQUIRED_MANIFEST_FIELDS = ("release", "app", "scenario", "seed", "agent")
#: Manifest fields the recorder sets itself; a caller's manifest must not hold them, and a
#: copy of a bundle's manifest drops them before it is recorded again.
RECORDER_FIELDS = frozenset(
    {
        "schema_version",
        "status",
        "complete",
        "sealed",
        "files",
        "content_digest",
        "manifest_digest",
        "incomplete_reason",
    }
)


class BundleError(Exception):
    """A bundle cannot be written or trusted; the message names the problem."""


def file_name(stream: str) -> str:
    return f"{stream}.jsonl"


def stream_files() -> set[str]:
    """The file names of every stream: exactly what a finished manifest's `files` lists."""
    return {file_name(stream) for stream in STREAMS}


def check_stream(stream: str) -> None:
    if stream not in STREAMS:
        raise ValueError(f"unknown bundle stream {stream!r}; streams are: {', '.join(STREAMS)}")


def canonical_json(obj: Any) -> str:
    """The one serialisation used for lines and digests (sorted keys, no spaces, no NaN)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def content_line(record: dict[str, Any]) -> bytes:
    """A record as it enters the content digest: top-level keys starting with `wall` dropped,
    because wall-clock measurements differ between two runs that are otherwise identical."""
    kept = {key: value for key, value in record.items() if not key.startswith("wall")}
    return (canonical_json(kept) + "\n").encode()


def combine_stream_digests(per_stream: dict[str, str]) -> str:
    """The content digest: SHA-256 over `<stream>:<sha256 of its content lines>\\n` for every
    deterministic stream in `DETERMINISTIC_STREAMS` order."""
    outer = hashlib.sha256()
    for stream in DETERMINISTIC_STREAMS:
        outer.update(f"{stream}:{per_stream[stream]}\n".encode())
    return outer.hexdigest()


def manifest_bytes(manifest: dict[str, Any]) -> bytes:
    """The exact bytes of `manifest.json`. The reader insists on them (not merely on equal JSON),
    because the signature is over bytes and a byte that changes nothing in the JSON (a space for
    the final newline) must still be a refused change."""
    return (canonical_json(manifest) + "\n").encode()


def manifest_digest(manifest: dict[str, Any]) -> str:
    """SHA-256 of the manifest's canonical JSON without its own digest field."""
    body = {key: value for key, value in manifest.items() if key != "manifest_digest"}
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()
