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
    SIGNATURE,
    SUPPORTED_SCHEMA_VERSIONS,
    BundleError,
    check_stream,
    combine_stream_digests,
    content_line,
    file_name,
    manifest_bytes,
    manifest_digest,
    stream_files,
)
from .signing import VerifyKey, as_verify_key, verify_signature

#: The consistent (status, complete, sealed) triples and whether such a manifest lists its files.
#: `running` is what a killed process leaves: the manifest written at start, no file digests.
_STATES: dict[str, tuple[bool, bool, bool]] = {
    "running": (False, False, False),
    "incomplete": (False, False, True),
    "complete": (True, True, True),
}
#: A killed process may leave its manifest's temporary copy behind, never in a closed bundle.
_RUNNING_LEFTOVER = f".{MANIFEST}.tmp"


class Bundle:
    """A verified bundle; streams are parsed on first use."""

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.path = path
        self.manifest = manifest
        #: None for an unsigned bundle, else {key_id, algorithm, verified_with_key}: whether the
        #: signature was also checked against a trusted key (not merely against its own key).
        self.signature: dict[str, Any] | None = None
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


def read_bundle(
    path: str | os.PathLike[str],
    allow_incomplete: bool = False,
    verify_key: VerifyKey | None = None,
) -> Bundle:
    """Open and verify the bundle at `path`.

    Refuses (BundleError, naming the problem):
    * a bundle schema this release does not read (version 1 was written by an older release);
    * a manifest whose bytes changed, or whose status, `complete` and `sealed` disagree;
    * unless `allow_incomplete`, a run that did not finish (closed incomplete, or killed before
      its final manifest: only such a truly running bundle skips the file digests);
    * a file missing from the folder or present but not listed in the manifest, a stream whose
      SHA-256 differs from the manifest's, a `content_digest` that the streams do not reproduce;
    * a `signature.json` that does not verify against the manifest's bytes, and, with
      `verify_key` (an Ed25519 public key or its PEM file), an unsigned bundle or one signed by
      another key.
    """
    trusted = as_verify_key(verify_key)
    directory = Path(path)
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        raise BundleError(f"{directory} is not a bundle: no {MANIFEST}")
    raw = manifest_path.read_bytes()
    try:
        manifest = json.loads(raw)
    except ValueError:
        raise BundleError(f"{manifest_path} is not valid JSON (modified or truncated)") from None
    if not isinstance(manifest, dict):
        raise BundleError(f"{manifest_path} is not a JSON object")
    _check_schema(directory, manifest.get("schema_version"))
    try:
        written_so = manifest.get("manifest_digest") == manifest_digest(manifest)
        written_so = written_so and raw == manifest_bytes(manifest)
    except ValueError:  # NaN or Infinity: JSON the recorder refuses to write
        written_so = False
    if not written_so:
        raise BundleError(f"{MANIFEST} of {directory} was modified after it was written")
    status = _check_state(directory, manifest)
    bundle = Bundle(directory, manifest)
    if status != "complete" and not allow_incomplete:
        reason = manifest.get("incomplete_reason") or "the run was killed before it finished"
        raise BundleError(
            f"{directory} is an incomplete bundle ({status}: {reason}); "
            "pass allow_incomplete (--allow-incomplete) to score it anyway"
        )
    signed = status == "complete" and (directory / SIGNATURE).exists()
    if status == "running":
        _check_listing(directory, stream_files() | {MANIFEST, _RUNNING_LEFTOVER})
    else:
        files = manifest["files"]
        _check_listing(directory, {MANIFEST, *files} | ({SIGNATURE} if signed else set()))
        for name, entry in sorted(files.items()):  # each listed file must exist and match
            _verify_file(directory / name, entry)
        try:
            recomputed = bundle.recompute_content_digest()
        except ValueError as exc:  # a record the recorder could not have written (NaN)
            raise BundleError(
                f"a stream of {directory} holds a record that is not canonical JSON: {exc}"
            ) from None
        if recomputed != manifest["content_digest"]:
            raise BundleError(
                f"content digest of {directory} does not match its manifest: the streams give "
                f"{recomputed}, {MANIFEST} says {manifest['content_digest']}"
            )
    if signed:
        bundle.signature = verify_signature(directory, raw, trusted)
    elif trusted is not None:
        raise BundleError(
            f"{directory} is not signed ({SIGNATURE} missing); a trusted key was given"
        )
    return bundle


def _check_schema(directory: Path, version: Any) -> None:
    if version in SUPPORTED_SCHEMA_VERSIONS:
        return
    supported = ", ".join(str(v) for v in SUPPORTED_SCHEMA_VERSIONS)
    if isinstance(version, int) and not isinstance(version, bool) and version < min(
        SUPPORTED_SCHEMA_VERSIONS
    ):
        raise BundleError(
            f"{directory} was written by an older release of pytest-marathon (bundle schema "
            f"version {version}; this release reads {supported}): the scorer's definitions "
            "changed since, so re-run the marathon to score it"
        )
    raise BundleError(
        f"{directory}: unknown bundle schema version {version!r}; this release reads "
        f"schema version(s) {supported}"
    )


def _check_state(directory: Path, manifest: dict[str, Any]) -> str:
    """The manifest's status, after proving its status fields tell one story: a manifest that
    says `running` (which skips the file digests) but also `complete: true`, or `complete`
    without `sealed`, was not written by the recorder."""
    status = manifest.get("status")
    complete, sealed = manifest.get("complete"), manifest.get("sealed")
    has_files = "files" in manifest
    state = _STATES.get(status) if isinstance(status, str) else None
    flags_are_bools = type(complete) is bool and type(sealed) is bool
    if state is None or not flags_are_bools or (complete, sealed, has_files) != state:
        raise BundleError(
            f"{MANIFEST} of {directory} is inconsistent: status {status!r} with complete "
            f"{complete!r}, sealed {sealed!r} and {'a' if has_files else 'no'} list of files"
        )
    if has_files:
        files = manifest["files"]
        if not isinstance(files, dict) or set(files) != stream_files():
            raise BundleError(f"{MANIFEST} of {directory} does not list exactly the stream files")
        if any(not isinstance(entry, dict) for entry in files.values()):
            raise BundleError(f"{MANIFEST} of {directory} has a malformed file entry")
        if not isinstance(manifest.get("content_digest"), str):
            raise BundleError(f"{MANIFEST} of {directory} lacks its content digest")
    elif "content_digest" in manifest:
        raise BundleError(f"{MANIFEST} of {directory} is inconsistent: running with a digest")
    return status


def _check_listing(directory: Path, allowed: set[str]) -> None:
    """Every entry of the folder must be a file the bundle accounts for: an extra file would be
    taken by a reader of the folder as part of the evidence while nothing vouches for it.
    (Missing files are found when each listed file is verified.)"""
    extra = sorted({entry.name for entry in directory.iterdir()} - allowed)
    if extra:
        raise BundleError(
            f"{extra[0]} in {directory} is not part of the bundle (not in its {MANIFEST})"
        )


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
