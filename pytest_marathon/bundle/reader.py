"""Open a bundle only after proving it is the bundle the run wrote.

Scores are evidence; a bundle whose bytes changed after the run, or whose format this code
does not know, must be refused rather than scored quietly.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .format import (
    DETERMINISTIC_STREAMS,
    MANIFEST,
    STREAMS,
    SUPPORTED_SCHEMA_VERSIONS,
    BundleError,
    check_stream,
    combine_stream_digests,
    content_line,
    file_name,
    manifest_digest,
)


class Bundle:
    """A verified bundle; streams are parsed on first use."""

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.path = path
        self.manifest = manifest
        self._streams: dict[str, list[dict[str, Any]]] = {}

    @property
    def complete(self) -> bool:
        return bool(self.manifest.get("complete"))

    @property
    def sealed(self) -> bool:
        return bool(self.manifest.get("sealed"))

    @property
    def status(self) -> str:
        return str(self.manifest.get("status", "running"))

    @property
    def content_digest(self) -> str | None:
        return self.manifest.get("content_digest")

    def stream(self, name: str) -> list[dict[str, Any]]:
        """The records of one stream in file order."""
        check_stream(name)
        if name not in self._streams:
            self._streams[name] = self._parse(name)
        return self._streams[name]

    def recompute_content_digest(self) -> str:
        """The content digest of the streams as they are on disk now."""
        per_stream = {}
        for name in DETERMINISTIC_STREAMS:
            inner = hashlib.sha256()
            for record in self.stream(name):
                inner.update(content_line(record))
            per_stream[name] = inner.hexdigest()
        return combine_stream_digests(per_stream)

    def _parse(self, name: str) -> list[dict[str, Any]]:
        path = self.path / file_name(name)
        if not path.exists():
            if self.status == "running":
                return []
            raise BundleError(f"bundle {self.path} lacks {path.name}")
        lines = path.read_bytes().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        records = []
        for number, line in enumerate(lines, start=1):
            try:
                record = json.loads(line)
            except ValueError:
                if self.status == "running" and number == len(lines):
                    break  # the line a killed run was writing
                raise BundleError(f"{path.name} line {number} is not JSON") from None
            if not isinstance(record, dict):
                raise BundleError(f"{path.name} line {number} is not a JSON object")
            records.append(record)
        return records


def read_bundle(path: str | os.PathLike[str], allow_incomplete: bool = False) -> Bundle:
    """Open and verify the bundle at `path`.

    Refuses (BundleError) an unknown schema version, a manifest or stream file whose bytes no
    longer match the recorded digests (naming the file), and, unless `allow_incomplete`, a run
    that did not finish (closed incomplete, or killed before its final manifest).
    """
    directory = Path(path)
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        raise BundleError(f"{directory} is not a bundle: no {MANIFEST}")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except ValueError:
        raise BundleError(f"{manifest_path} is not valid JSON (modified or truncated)") from None
    if not isinstance(manifest, dict):
        raise BundleError(f"{manifest_path} is not a JSON object")
    version = manifest.get("schema_version")
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        supported = ", ".join(str(v) for v in SUPPORTED_SCHEMA_VERSIONS)
        raise BundleError(
            f"{directory}: unknown bundle schema version {version!r}; this release reads "
            f"schema version(s) {supported}"
        )
    if manifest.get("manifest_digest") != manifest_digest(manifest):
        raise BundleError(f"{MANIFEST} of {directory} was modified after it was written")
    bundle = Bundle(directory, manifest)
    if not bundle.complete and not allow_incomplete:
        reason = manifest.get("incomplete_reason") or "the run was killed before it finished"
        raise BundleError(
            f"{directory} is an incomplete bundle ({bundle.status}: {reason}); "
            "pass allow_incomplete (--allow-incomplete) to score it anyway"
        )
    files = manifest.get("files")
    if bundle.status != "running":
        if not isinstance(files, dict) or set(files) != {file_name(s) for s in STREAMS}:
            raise BundleError(f"{MANIFEST} of {directory} does not list every stream file")
        for name, entry in sorted(files.items()):
            _verify_file(directory / name, entry)
    return bundle


def _verify_file(path: Path, entry: dict[str, Any]) -> None:
    if not path.is_file():
        raise BundleError(f"bundle file {path.name} is missing from {path.parent}")
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != entry.get("sha256"):
        raise BundleError(
            f"bundle file {path.name} in {path.parent} does not match its manifest digest "
            "(its bytes changed after the run)"
        )
