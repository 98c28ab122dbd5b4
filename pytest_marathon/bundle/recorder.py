"""Write a run's evidence as it happens, so that any interruption still leaves a bundle.

Every record of an ordinary stream is written and flushed the moment it is appended and only
running hashes are kept, so a 90-minute run costs constant memory and a killed process loses at
most the line being written. The manifest is written at start (status `running`) and rewritten
atomically at the end.

The one exception is a *held* stream (`Recorder(..., hold=("schedule",))`): its records are kept
in memory and written only when the bundle is sealed or closed incomplete. The schedule is the
answer key; written live, any process that can read the output folder during the run (an agent,
whatever its sandbox) could read every culprit and remedy. Holding it trades the flush-per-record
promise for that one stream only: a clean seal, Ctrl-C, SIGTERM or an error still writes it, a
SIGKILL loses it (the bundle then stays `running`, unscoreable anyway). Its file exists, empty,
from the start, so a running bundle has the same set of files as before.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import threading
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, NamedTuple

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from .format import (
    DETERMINISTIC_STREAMS,
    MANIFEST,
    RECORDER_FIELDS,
    REQUIRED_MANIFEST_FIELDS,
    SCHEMA_VERSION,
    STREAMS,
    BundleError,
    canonical_json,
    check_stream,
    combine_stream_digests,
    content_line,
    file_name,
    manifest_bytes,
    manifest_digest,
)
from .signing import write_signature

_READ_ONLY = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH


class _StreamWriter:
    """One append-only JSONL file with the hashes the manifest needs, updated per line.

    A held writer keeps its records in memory until `release()`; the hashes only ever cover what
    is on disk, so the manifest cannot vouch for a line that was never written.

    A line counts once its bytes are written *and* its accounting (hashes, line count, size) is
    stored, which is one attribute assignment: Ctrl-C lands between bytecodes, so it sees either
    the old or the new accounting, never half of it. A line whose write was cut off (or written
    but not yet counted) is cut from the file by `close()`, which truncates the file to the
    counted size: the file always holds exactly what the manifest counts."""

    def __init__(self, path: Path, *, held: bool = False) -> None:
        self.path = path
        self.handle: IO[bytes] = path.open("xb")
        self._count = _Count(hashlib.sha256(), hashlib.sha256(), 0, 0)
        self.held: list[tuple[bytes, bytes]] | None = [] if held else None

    @property
    def lines(self) -> int:
        return self._count.lines

    @property
    def content_hash(self) -> Any:
        return self._count.content_hash

    def append(self, record: dict[str, Any]) -> None:
        """Write now, or keep for `release()` when held. A held record is serialised now, so a
        bad record is refused when appended and a later change to the caller's dict (the runner
        keeps the same dicts for its own bookkeeping) cannot alter what is written."""
        line = (canonical_json(record) + "\n").encode(), content_line(record)
        if self.held is None:
            self._write(*line)
        else:
            self.held.append(line)

    def release(self) -> None:
        """Write every held record, in append order (a no-op for an ordinary stream)."""
        held, self.held = self.held or [], None
        for line in held:
            self._write(*line)

    def close(self) -> None:
        """Close the file holding exactly the counted lines (see the class docstring)."""
        try:
            self.handle.truncate(self._count.size)
        finally:
            self.handle.close()

    def _write(self, line: bytes, content: bytes) -> None:
        count = self._count
        file_hash, content_hash = count.file_hash.copy(), count.content_hash.copy()
        file_hash.update(line)
        content_hash.update(content)
        self.handle.write(line)
        self.handle.flush()
        self._count = _Count(file_hash, content_hash, count.lines + 1, count.size + len(line))

    def entry(self) -> dict[str, Any]:
        count = self._count
        return {"sha256": count.file_hash.hexdigest(), "lines": count.lines, "bytes": count.size}


class _Count(NamedTuple):
    """What the manifest says of one stream; replaced whole, never updated in place."""

    file_hash: Any
    content_hash: Any
    lines: int
    size: int


class Recorder:
    """Records one run into `directory` (created; must not exist or be empty).

    Use as a context manager: a clean exit seals the bundle, an exception (including
    KeyboardInterrupt) closes it as incomplete with the exception as the reason. Streams named in
    `hold` are kept in memory and written at sealing or closing (see the module docstring): the
    runner holds `schedule`, so ground truth is not on disk while an agent can look. With `sign_key`
    (an Ed25519 private key) sealing also signs the final manifest (`signature.json`); an
    incomplete bundle is never signed, since it is not evidence anyone should vouch for.
    Fields in `reveal` are added to the manifest only when it is sealed or closed incomplete.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        manifest: dict[str, Any],
        *,
        sign_key: Ed25519PrivateKey | None = None,
        hold: tuple[str, ...] = (),
        reveal: Mapping[str, Any] | None = None,
    ) -> None:
        _check_sign_key(sign_key)
        for stream in hold:
            check_stream(stream)
        missing = [name for name in REQUIRED_MANIFEST_FIELDS if name not in manifest]
        if missing:
            raise ValueError(f"bundle manifest lacks required field(s): {', '.join(missing)}")
        reserved = RECORDER_FIELDS & set(manifest)
        if reserved:
            raise ValueError(f"bundle manifest field(s) {sorted(reserved)} are set by the recorder")
        reveal = dict(reveal or {})
        clash = (set(manifest) | RECORDER_FIELDS) & set(reveal)
        if clash:
            raise ValueError(f"revealed manifest field(s) {sorted(clash)} are set elsewhere")
        canonical_json(manifest)  # refuse unserialisable manifests before touching the disk
        canonical_json(reveal)
        self.directory = Path(directory)
        if self.directory.exists() and any(self.directory.iterdir()):
            raise BundleError(f"bundle directory {self.directory} already exists and is not empty")
        self.directory.mkdir(parents=True, exist_ok=True)
        self._base = dict(manifest)
        self._reveal = reveal
        self._sign_key = sign_key
        # Appends may come from other threads (an agent's tool calls, the MCP server); the lock
        # makes "check the state, write the line" and "stop appending, close" one step each, so
        # nothing is appended once closing has begun and the manifest counts what is on disk.
        self._lock = threading.RLock()
        self._writers: dict[str, _StreamWriter] = {}
        try:
            for s in STREAMS:
                self._writers[s] = _StreamWriter(self.directory / file_name(s), held=s in hold)
            self._state = "running"
            self._write_manifest({"status": "running", "complete": False, "sealed": False})
        except BaseException:  # e.g. Ctrl-C: leave no folder without a manifest behind
            for writer in self._writers.values():
                writer.handle.close()
            if not (self.directory / MANIFEST).exists():
                shutil.rmtree(self.directory, ignore_errors=True)
            raise

    @property
    def path(self) -> Path:
        return self.directory

    @property
    def state(self) -> str:
        """`running`, `closing`, `sealed` or `closed incomplete`."""
        return self._state

    def append(self, stream: str, record: dict[str, Any]) -> None:
        """Write one record to `stream` now (flushed), or keep it until the bundle is finished if
        the stream is held; refuses (BundleError) once sealing or closing has begun."""
        if not self.try_append(stream, record):
            raise BundleError(f"bundle {self.directory} is already {self._state}; cannot append")

    def try_append(self, stream: str, record: dict[str, Any]) -> bool:
        """`append`, but a record arriving after sealing or closing began is dropped (False):
        for writers on other threads that may outlive the run (a late tool call)."""
        check_stream(stream)
        if not isinstance(record, dict):
            raise ValueError(f"a {stream} record must be a dict, got {type(record).__name__}")
        with self._lock:
            if self._state != "running":
                return False
            self._writers[stream].append(record)
            return True

    def seal(self, sign_key: Ed25519PrivateKey | None = None) -> str:
        """Finish a complete run: hashes into the manifest, files read-only; returns the
        content digest. Signs with `sign_key`, else with the constructor's key, if any."""
        _check_sign_key(sign_key)
        key = sign_key if sign_key is not None else self._sign_key
        digest = self._finish()
        written = self._write_manifest(
            {
                **self._reveal,
                "status": "complete",
                "complete": True,
                "sealed": True,
                **self._hashes(digest),
            }
        )
        for path in [*(w.path for w in self._writers.values()), self.directory / MANIFEST]:
            path.chmod(_READ_ONLY)
        self._state = "sealed"
        if key is not None:  # after the manifest: a crash between leaves it sealed, unsigned
            write_signature(self.directory, written, key)
        return digest

    def close_incomplete(self, reason: str) -> None:
        """Finish an interrupted run: a valid, unsealed manifest marked incomplete."""
        digest = self._finish()
        self._write_manifest(
            {
                **self._reveal,
                "status": "incomplete",
                "complete": False,
                "sealed": False,
                "incomplete_reason": str(reason),
                **self._hashes(digest),
            }
        )
        self._state = "closed incomplete"

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._state != "running":
            return
        if exc_type is None:
            self.seal()
        else:
            self.close_incomplete(f"{exc_type.__name__}: {exc}")

    def _finish(self) -> str:
        """Stop appends, write the held streams, close every file, return the content digest."""
        with self._lock:
            if self._state != "running":
                raise BundleError(f"bundle {self.directory} is already {self._state}")
            self._state = "closing"
        for writer in self._writers.values():
            writer.release()
            writer.close()
        return combine_stream_digests(
            {s: self._writers[s].content_hash.hexdigest() for s in DETERMINISTIC_STREAMS}
        )

    def _hashes(self, digest: str) -> dict[str, Any]:
        files = {file_name(s): self._writers[s].entry() for s in STREAMS}
        return {"files": files, "content_digest": digest}

    def _write_manifest(self, status: dict[str, Any]) -> bytes:
        """Write the manifest atomically; returns its exact bytes (what a signature covers)."""
        manifest = {**self._base, "schema_version": SCHEMA_VERSION, **status}
        manifest["manifest_digest"] = manifest_digest(manifest)
        data = manifest_bytes(manifest)
        target = self.directory / MANIFEST
        temporary = self.directory / f".{MANIFEST}.tmp"
        temporary.write_bytes(data)
        os.replace(temporary, target)
        return data


def _check_sign_key(key: Any) -> None:
    """Refuse a wrong key before anything is written, not after the run at sealing."""
    if key is not None and not isinstance(key, Ed25519PrivateKey):
        raise TypeError(f"sign_key must be an Ed25519PrivateKey, got {type(key).__name__}")
