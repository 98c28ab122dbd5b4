"""The inside half of the loopback relay, started in the sandbox before the agent's program.

Run as `python -I -S inner.py SOCKET=PORT... -- PROGRAM ARGS...`: it listens on 127.0.0.1:PORT
(the sandbox's own loopback) and forwards each connection to SOCKET, the Unix socket the runner
mounted in, so the agent reaches the run's endpoints at the very URLs on its context. Then it
becomes the program (exec), the relay living on in a forked process. Standard library only, no package import: it must
start in milliseconds and must not depend on what the sandbox hides (its twin outside is
`relay.py`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

CHUNK = 65536


def pump(source: socket.socket, target: socket.socket) -> None:
    """Copy bytes one way until the source's end of stream, then pass the end on (half-close),
    so a reply still coming the other way is not cut; on an error, close both ways. (The
    runner's half, `relay.py`, uses this same function.)"""
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


def relay_forever(listeners: list[tuple[socket.socket, str]]) -> None:
    """The relay process: let go of the program's stdin/stdout (a pipe the runner reads must
    close when the program ends), then serve until the sandbox is torn down."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    for listener, path in listeners:
        threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    threading.Event().wait()


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: inner.py SOCKET=PORT... -- PROGRAM ARGS...", file=sys.stderr)
        return 2
    split = argv.index("--")
    relays, command = argv[:split], argv[split + 1 :]
    listeners = []
    for relay in relays:
        path, _, port = relay.rpartition("=")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(port)))
        listener.listen(64)
        listeners.append((listener, path))
    # The relay forks off; this process becomes the program, so its exit status is the
    # sandbox's, and the relay ends with the sandbox's pid namespace when the program exits.
    if os.fork() == 0:
        try:
            relay_forever(listeners)
        finally:
            os._exit(0)
    for listener, _ in listeners:
        listener.close()
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"sandbox: cannot run {command[0]!r}: {exc}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
