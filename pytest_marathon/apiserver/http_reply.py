"""The HTTP plumbing the twin's Prometheus and Jaeger APIs share: keep-alive answers with a
length, sent without Nagle's delay, no access log on the terminal, a server on a daemon thread."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: without TCP_NODELAY a keep-alive client's delayed
    # ACK holds every answer ~40 ms
    disable_nagle_algorithm = True

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass


@dataclass
class ServedHttp:
    """A running server: its base `url` (no trailing slash), the `lock` every request holds,
    and `close()`."""

    url: str
    lock: Any
    server: ThreadingHTTPServer
    thread: threading.Thread

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_in_thread(handler: type[BaseHTTPRequestHandler], *, host: str, port: int, lock: Any,
                    name: str) -> ServedHttp:
    """Serve on a daemon thread until `close()`."""
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    bound_host, bound_port = server.server_address[:2]
    return ServedHttp(f"http://{bound_host}:{bound_port}", lock, server, thread)
