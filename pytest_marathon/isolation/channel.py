"""JSON lines over a pair of pipes: the child plug-in's only connection to the runner.

One message per line, request and answer strictly alternating, so neither side can block the
other on a full pipe. The runner's end reads with a deadline (a plug-in that stops answering is
a timeout, not a hung run); the child's end is plain blocking files.
"""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any, BinaryIO

MAX_LINE = 256 * 1024 * 1024  # a runaway writer must not eat the runner's memory


class ChannelClosed(EOFError):
    """The other side closed its end (the child exited, or the runner went away)."""


class ChannelTimeout(TimeoutError):
    """No whole message arrived before the deadline."""


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), default=str).encode() + b"\n"


class RunnerEnd:
    """The runner's side: writes to the child's stdin, reads its channel with a deadline."""

    def __init__(self, to_child: BinaryIO, from_child: BinaryIO) -> None:
        self._out = to_child
        self._fd = from_child.fileno()
        os.set_blocking(self._fd, False)
        self._buffer = bytearray()

    def send(self, message: dict[str, Any]) -> None:
        try:
            self._out.write(encode(message))
            self._out.flush()
        except (BrokenPipeError, ValueError, OSError) as exc:
            raise ChannelClosed(str(exc)) from None

    def receive(self, deadline: float) -> dict[str, Any]:
        """The next message; ChannelTimeout at `deadline` (time.monotonic), ChannelClosed on EOF."""
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                try:
                    message = json.loads(line)
                except ValueError as exc:
                    raise ChannelClosed(f"unreadable message from the agent process: {exc}") from None
                if not isinstance(message, dict):
                    raise ChannelClosed("unreadable message from the agent process")
                return message
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelTimeout()
            ready, _, _ = select.select([self._fd], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(self._fd, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                raise ChannelClosed("the agent process closed its channel")
            self._buffer += chunk
            if len(self._buffer) > MAX_LINE:
                raise ChannelClosed("the agent process sent an oversized message")


class ChildEnd:
    """The child's side: blocking reads and writes on private copies of stdin and stdout."""

    def __init__(self, from_runner: BinaryIO, to_runner: BinaryIO) -> None:
        self._in = from_runner
        self._out = to_runner

    def send(self, message: dict[str, Any]) -> None:
        self._out.write(encode(message))
        self._out.flush()

    def receive(self) -> dict[str, Any]:
        line = self._in.readline()
        if not line:
            raise ChannelClosed("the runner closed the channel")
        return json.loads(line)
