"""The outside half of the loopback relay: Unix sockets that reach the run's loopback endpoints.

A sandboxed process has its own network namespace with nothing but loopback, so the runner's
MCP server and metering proxy are out of its reach. For each endpoint on the invocation context
the runner listens on a Unix socket in a private folder; the folder is mounted into the sandbox,
where `inner.py` listens on the same 127.0.0.1 port and forwards each connection to the socket.
Only the endpoints relayed here exist for the agent: nothing else of the host's network does.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

# One pump for both halves: the inside half is a standard-library script the sandbox runs
# without the package, so the code lives there and this side imports it.
from pytest_marathon.isolation.inner import pump

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def loopback_port(url: str) -> int | None:
    """The port of a loopback http(s) URL; None for anything else (it is not relayed)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.hostname not in LOOPBACK_HOSTS:
        return None
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return port



def splice(a: socket.socket, b: socket.socket) -> None:
    """Relay one connection both ways from daemon threads; both sockets close when it ends."""

    def both() -> None:
        back = threading.Thread(target=pump, args=(b, a), daemon=True)
        back.start()
        pump(a, b)
        back.join()
        a.close()
        b.close()

    threading.Thread(target=both, name="marathon-relay-conn", daemon=True).start()


class RelayPool:
    """One Unix socket per relayed port, in a private folder, served from daemon threads."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="marathon-relay-"))
        self.sockets: dict[int, Path] = {}
        self._listeners: list[socket.socket] = []
        self._closed = threading.Event()

    def relay(self, urls: Iterable[str]) -> dict[int, Path]:
        """Serve every loopback URL's port (once each); returns port -> socket path."""
        for url in urls:
            port = loopback_port(url)
            if port is not None and port not in self.sockets:
                self.sockets[port] = self._listen(port)
        return dict(self.sockets)

    def _listen(self, port: int) -> Path:
        path = self.folder / f"{port}.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        os.chmod(path, 0o600)
        listener.listen(64)
        self._listeners.append(listener)
        threading.Thread(
            target=self._accept, args=(listener, port), name=f"marathon-relay-{port}", daemon=True
        ).start()
        return path

    def _accept(self, listener: socket.socket, port: int) -> None:
        while not self._closed.is_set():
            try:
                inner, _ = listener.accept()
            except OSError:
                return
            try:
                outer = socket.create_connection(("127.0.0.1", port), timeout=10)
                outer.settimeout(None)
            except OSError:
                inner.close()
                continue
            splice(inner, outer)

    def close(self) -> None:
        self._closed.set()
        for listener in self._listeners:
            with contextlib.suppress(OSError):
                listener.close()
        for path in self.sockets.values():
            with contextlib.suppress(OSError):
                path.unlink()
        with contextlib.suppress(OSError):
            self.folder.rmdir()
