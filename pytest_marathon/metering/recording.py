"""Recorded model exchanges: the file format, writing it during a run, reading it back.

`--marathon-record-model=DIR` keeps every exchange the metering proxy relays in `DIR/<run
id>.jsonl` so that `--marathon-replay-model=DIR` (`replay.py`) can answer a later run of the same
configuration with no upstream, no credentials and no network (docs/model-recordings.md).

The file is JSON lines: a header, one line per exchange in the order the answers ended, and an
`end` line written when the proxy closes. It is written under a temporary name beside the final
one and renamed into place at the end, so a finished recording appears whole and a recording of
another run (another xdist worker, another session) is never overwritten half-way; each line is
written with one call and flushed, so the temporary file a crash leaves is readable up to its
last complete line (`read_recording(..., allow_partial=True)`).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = "pytest-marathon-model-exchanges"
VERSION = 1
PARTIAL_SUFFIX = ".partial"
#: Answer headers that change what a client does with an answer (how to read it, whether and
#: when to retry); the rest (dates, request ids, rate-limit counters) are not kept.
KEPT_HEADERS = ("content-type", "retry-after", "retry-after-ms", "x-should-retry")


class RecordingError(ValueError):
    """A recording that cannot be written or read; the message names the file and the problem."""


def recording_path(folder: Path, run_id: str) -> Path:
    return Path(folder) / f"{run_id}.jsonl"


def canonical(value: Any) -> str:
    """The one serialisation requests are compared in (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_value(body: bytes) -> dict[str, Any]:
    """A request body as it is stored and matched: `{"json": value}` for a JSON body (so key
    order and spacing do not matter), else `{"base64": ...}` (an empty body included)."""
    if body:
        try:
            return {"json": json.loads(body)}
        except ValueError:
            pass
    return {"base64": base64.b64encode(body).decode()}


def _body_fields(content: bytes) -> dict[str, str]:
    try:
        return {"body": content.decode("utf-8")}
    except UnicodeDecodeError:
        return {"body_base64": base64.b64encode(content).decode()}


@dataclass(frozen=True)
class Exchange:
    """One recorded exchange: where it was in the run (invocation `n`, its `k`-th request, from
    1), the request (method, route under the proxy's token, `request_value` of the body) and the
    answer the client got from upstream (status, content type, the body or the stream's bytes)."""

    n: int
    k: int
    method: str
    route: str
    request: Mapping[str, Any]
    status: int
    headers: Mapping[str, str]
    content: bytes
    metered: bool

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.method, self.route, canonical(self.request))

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "k": self.k,
            "method": self.method,
            "route": self.route,
            "metered": self.metered,
            "request": dict(self.request),
            "response": {
                "status": self.status,
                "headers": dict(sorted(self.headers.items())),
                **_body_fields(self.content),
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Exchange:
        response = data["response"]
        if "body_base64" in response:
            content = base64.b64decode(response["body_base64"])
        else:
            content = str(response["body"]).encode("utf-8")
        request = data["request"]
        if not isinstance(request, Mapping) or set(request) not in ({"json"}, {"base64"}):
            raise ValueError("`request` must be {\"json\": ...} or {\"base64\": ...}")
        return cls(
            n=int(data["n"]),
            k=int(data["k"]),
            method=str(data["method"]),
            route=str(data["route"]),
            request=request,
            status=int(response["status"]),
            headers={str(k): str(v) for k, v in (response.get("headers") or {}).items()},
            content=content,
            metered=bool(data.get("metered", True)),
        )


class RecordingWriter:
    """Appends exchanges to a run's recording; `close()` renames it into place. Thread-safe:
    the proxy answers on its own thread, streams end whenever their client stops reading."""

    def __init__(self, folder: Path, run_id: str) -> None:
        self.path = recording_path(folder, run_id)
        self.partial = self.path.with_name(
            f"{self.path.name}.{secrets.token_hex(4)}{PARTIAL_SUFFIX}"
        )
        self._lock = threading.Lock()
        self._count = 0
        try:
            self._file = open(self.partial, "x", encoding="utf-8")  # noqa: SIM115 - kept open
        except OSError as exc:
            raise RecordingError(
                f"cannot write the model recording {self.partial}: {exc.strerror or exc}"
            ) from None
        self._line({"format": FORMAT, "version": VERSION, "run_id": run_id})

    def _line(self, record: Mapping[str, Any]) -> None:
        self._file.write(canonical(record) + "\n")
        self._file.flush()

    def add(self, exchange: Exchange) -> None:
        with self._lock:
            if self._file.closed:
                return  # a stream that ended after the run: the recording is already final
            self._line(exchange.to_json())
            self._count += 1

    def close(self) -> None:
        with self._lock:
            if self._file.closed:
                return
            self._line({"end": True, "exchanges": self._count})
            os.fsync(self._file.fileno())
            self._file.close()
            os.replace(self.partial, self.path)


@dataclass(frozen=True)
class Recording:
    path: Path
    run_id: str
    exchanges: tuple[Exchange, ...]
    #: False when the file has no `end` line (a run that crashed while it was recorded).
    complete: bool


def read_recording(path: Path, *, allow_partial: bool = False) -> Recording:
    """The exchanges of a recording, ordered by position (invocation, request). A last line cut
    short by a crash is left out; anything else malformed is a RecordingError naming the line.
    Without `allow_partial` a recording without its `end` line is refused."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecordingError(f"no model recording {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordingError(f"cannot read the model recording {path}: {exc}") from None
    lines = text.split("\n")
    if lines and not text.endswith("\n"):
        lines = lines[:-1]  # the unfinished line of a crash
    lines = [line for line in lines if line]
    if not lines:
        raise RecordingError(f"{path} is empty, not a model recording")
    try:
        header = json.loads(lines[0])
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise RecordingError(f"{path} is not a model recording (no {FORMAT} header)")
    if header.get("version") != VERSION:
        raise RecordingError(
            f"{path}: model recording version {header.get('version')!r}; this release reads "
            f"version {VERSION}"
        )
    exchanges: list[Exchange] = []
    complete = False
    for number, line in enumerate(lines[1:], start=2):
        try:
            data = json.loads(line)
            if isinstance(data, dict) and data.get("end") is True:
                complete = True
                break
            exchanges.append(Exchange.from_json(data))
        except (ValueError, KeyError, TypeError) as exc:
            raise RecordingError(f"{path}, line {number}: not a recorded exchange ({exc})") from None
    if not complete and not allow_partial:
        raise RecordingError(
            f"{path} has no end line: the recording stopped before its run finished"
        )
    exchanges.sort(key=lambda e: (e.n, e.k))
    return Recording(Path(path), str(header.get("run_id") or ""), tuple(exchanges), complete)
