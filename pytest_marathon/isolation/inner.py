"""The inside half of the loopback relay, started in the sandbox before the agent's program.

Run as `python -I -S inner.py SOCKET=PORT... -- PROGRAM ARGS...`: it listens on 127.0.0.1:PORT
(the sandbox's own loopback) and forwards each connection to SOCKET, the Unix socket the runner
mounted in, so the agent reaches the run's endpoints at the very URLs on its context. Then it
runs the program and exits with its status. Standard library only, no package import: it must
start in milliseconds and must not depend on what the sandbox hides (its twin outside is
`relay.py`).
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import threading

CHUNK = 65536


def pump(source: socket.socket, target: socket.socket) -> None:
    how = socket.SHUT_WR
    try:
        while data := source.recv(CHUNK):
            target.sendall(data)
    except OSError:
        how = socket.SHUT_RDWR
    with contextlib.suppress(OSError):
        target.shutdown(how)
    if how == socket.SHUT_RDWR:
        with contextlib.suppress(OSError):
            source.shutdown(socket.SHUT_RDWR)


def connection(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=connection, args=(client, path), daemon=True).start()


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: inner.py SOCKET=PORT... -- PROGRAM ARGS...", file=sys.stderr)
        return 2
    split = argv.index("--")
    relays, command = argv[:split], argv[split + 1 :]
    for relay in relays:
        path, _, port = relay.rpartition("=")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(port)))
        listener.listen(64)
        threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        print(f"sandbox: cannot run {command[0]!r}: {exc}", file=sys.stderr)
        return 127
    signal.signal(signal.SIGTERM, lambda signum, frame: child.terminate())
    code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
