"""What the metering proxy does with a run's model exchanges besides metering them: record them
(`--marathon-record-model`), answer them from a recording (`--marathon-replay-model`), or
nothing. It numbers the requests by position (invocation n, k-th request of it) and keeps the
first replay mismatch for the invocation record that reports it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_marathon.metering.recording import (
    Exchange,
    RecordingError,
    RecordingWriter,
    read_recording,
    recording_path,
)
from pytest_marathon.metering.replay import Replayer


class ModelExchanges:
    """One run's record or replay mode (exactly one of `folder_to_record` / `replayer`)."""

    def __init__(
        self,
        run_id: str,
        *,
        folder_to_record: Path | None = None,
        replayer: Replayer | None = None,
    ) -> None:
        self.run_id = run_id
        self.folder_to_record = folder_to_record
        self.replayer = replayer
        self._writer: RecordingWriter | None = None
        self._lock = threading.Lock()
        self._n = 0
        self._k: dict[int, int] = {}
        self._mismatch: str | None = None
        self._reported = False

    @property
    def replaying(self) -> bool:
        return self.replayer is not None

    def open(self) -> None:
        """Start the recording file (when recording); called as the proxy starts."""
        if self.folder_to_record is not None and self._writer is None:
            self._writer = RecordingWriter(self.folder_to_record, self.run_id)

    def begin_invocation(self, n: int) -> None:
        with self._lock:
            self._n = n

    def position(self) -> tuple[int, int]:
        """The position of a request arriving now: (invocation, its k-th request from 1)."""
        with self._lock:
            k = self._k.get(self._n, 0) + 1
            self._k[self._n] = k
            return self._n, k

    def end_invocation(self) -> str | None:
        """The run's first replay mismatch, once, when it is known by the end of this
        invocation (a request that did not match, or a recorded one not sent); else None."""
        with self._lock:
            n, self._n = self._n, 0
            if self.replayer is not None and self._mismatch is None:
                self._mismatch = self.replayer.missed(n)
            if self._mismatch is None or self._reported:
                return None
            self._reported = True
            return self._mismatch

    def answer(
        self, n: int, k: int, method: str, route: str, request: Mapping[str, Any]
    ) -> Exchange | str:
        """Replay: the recorded answer, or the mismatch line (the first is kept for the record)."""
        assert self.replayer is not None
        found = self.replayer.take(n, k, method, route, request)
        if isinstance(found, str):
            with self._lock:
                if self._mismatch is None:
                    self._mismatch = found
        return found

    def record(self, exchange: Exchange) -> None:
        if self._writer is not None:
            self._writer.add(exchange)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def check_folders(record: Path | None, replay: Path | None, *, record_option: str,
                  replay_option: str) -> None:
    """The checks both front ends make before any run: one mode only, a replay folder that
    exists, a record folder that is (or can be) a writable folder. RecordingError, in words."""
    if record is not None and replay is not None:
        raise RecordingError(
            f"{record_option} and {replay_option} cannot be used together: a run either records "
            "its model exchanges or replays them"
        )
    if replay is not None and not Path(replay).is_dir():
        raise RecordingError(f"{replay_option}: no folder {replay}")
    if record is not None:
        folder = Path(record)
        if folder.exists() and not folder.is_dir():
            raise RecordingError(f"{record_option}: {folder} is a file, not a folder")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RecordingError(
                f"{record_option}: cannot create {folder}: {exc.strerror or exc}"
            ) from None
        if not os.access(folder, os.W_OK | os.X_OK):
            raise RecordingError(f"{record_option}: cannot write in {folder}")


def model_exchanges(
    run_id: str, record: Path | None, replay: Path | None
) -> ModelExchanges | None:
    """The run's mode, with its recording read now (so a missing or broken one stops the run
    before anything is written); None when it neither records nor replays."""
    check_folders(record, replay, record_option="record", replay_option="replay")
    if replay is not None:
        recording = read_recording(recording_path(replay, run_id))
        return ModelExchanges(run_id, replayer=Replayer(recording))
    if record is not None:
        return ModelExchanges(run_id, folder_to_record=Path(record))
    return None
