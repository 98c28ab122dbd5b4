"""The HTTP side of the twin's Kubernetes API: a loopback server, one lock, an audit hook.

Every request and every clock step runs under one lock, because the twin is not thread-safe
and a read must never see half a tick. Each request is reported to an optional audit callback
as `{verb, path, status}` (the Kubernetes verb: get, list, watch, patch, ...), so a marathon can
record a refused Secret read as it records the refused tool call. Watches answer with the
current objects and then hold the connection briefly for changes before closing; client-go's
reflector re-watches from the last resourceVersion, so `kubectl rollout status` follows a
rollout as the clock moves (client-go tools/cache/reflector.go).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pytest_marathon.apiserver import exec_stream
from pytest_marathon.apiserver.operator import OperatorApi
from pytest_marathon.apiserver.resources import (
    CLOCK_PATH,
    KubeApi,
    Reply,
    json_reply,
    parse_target,
    verb_of,
)
from pytest_marathon.apiserver.status import ApiError
from pytest_marathon.apiserver.tls import self_signed
from pytest_marathon.backends.base import Backend, BackendError

AuditHook = Callable[[dict[str, Any]], None]
#: How long a watch stays open for changes (wall seconds) unless the client asks for less.
WATCH_HOLD_SECONDS = 2.0
_WATCH_POLL_SECONDS = 0.1


class KubeApiServer:
    """The Kubernetes REST API over a live backend, on a loopback port (0: any free one)."""

    def __init__(self, backend: Backend, *, host: str = "127.0.0.1", port: int = 0,
                 audit: AuditHook | None = None, lock: threading.RLock | None = None,
                 clock_token: str | None = None, operator_token: str | None = None, tls: bool = False) -> None:
        self.api = KubeApi(backend, clock_token, operator_token)
        self.operator = OperatorApi(self.api, operator_token)
        self.backend = backend
        self.lock = lock or threading.RLock()
        self.audit = audit
        self._httpd = ThreadingHTTPServer((host, port), _handler_for(self))
        self._httpd.daemon_threads = True
        # HTTPS when asked: kubectl sends the operator's token over TLS only (apiserver/tls.py)
        self.certificate = self_signed(host) if tls else None
        if self.certificate is not None:
            self._httpd.socket = self.certificate.server_context().wrap_socket(
                self._httpd.socket, server_side=True, do_handshake_on_connect=False)  # handshake in the request thread
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="kube-api", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"{'https' if self.certificate else 'http'}://{host}:{port}"

    @property
    def now(self) -> float:
        with self.lock:
            return self.backend.now

    def advance_to(self, t: float) -> float:
        """Step the backend's clock (the same path as `POST /marathon/v1/clock`)."""
        with self.lock:
            self.api.advance_to(t)
            return self.backend.now

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> KubeApiServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record(self, verb: str, path: str, status: int) -> None:
        if self.audit is not None and not path.startswith(CLOCK_PATH):
            self.audit({"verb": verb, "path": path, "status": status})


def start_kube_api(backend: Backend, *, host: str = "127.0.0.1", port: int = 0,
                   audit: AuditHook | None = None, lock: threading.RLock | None = None,
                   clock_token: str | None = None, operator_token: str | None = None,
                   tls: bool = False) -> KubeApiServer:
    """Serve the Kubernetes API over `backend`. `audit` gets one `{verb, path, status}` per
    request; `clock_token`, when given, is the bearer token `POST /marathon/v1/clock` needs;
    `operator_token` is the bearer token of the operator identity (apiserver/identity.py), which
    also carries the harness's own requests (apiserver/operator.py);
    `tls` serves HTTPS with a fresh self-signed certificate (`server.certificate`)."""
    return KubeApiServer(backend, host=host, port=port, audit=audit, lock=lock, clock_token=clock_token,
                         operator_token=operator_token, tls=tls)


def _handler_for(server: KubeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # headers and body go out in two writes: without TCP_NODELAY a keep-alive client's
        # delayed ACK holds every answer ~40 ms
        disable_nagle_algorithm = True
        server_version = "pytest-marathon-kube-api"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
            """Quiet: the audit hook is the request log."""

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            if parts.path.endswith("/exec") and "/pods/" in parts.path:
                self._exec(parts.path, parse_qs(parts.query, keep_blank_values=True))
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            query = parse_qs(parts.query, keep_blank_values=True)
            target = parse_target(parts.path)
            verb = verb_of(self.command, target, query)
            if verb == "watch" and target is not None:
                self._watch(parts.path, parts.query, query, verb)
                return
            # OpenAPI comes from the client's models, not the twin: generating it (seconds, once)
            # must not hold up the twin's clock, which a marathon steps under the same lock
            lock = contextlib.nullcontext() if parts.path.startswith("/openapi/") else server.lock
            headers = _headers(self.headers)
            try:
                with lock:
                    if server.operator.claims(self.command, parts.path, headers):
                        reply = server.operator.handle(self.command, parts.path, headers, body)
                    else:
                        reply = server.api.handle(self.command, parts.path, parts.query, headers, body)
            except ApiError as exc:
                reply = json_reply(exc.status(), exc.code)
            server.record(verb, self.path, reply.status)
            self._send(reply)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        def _send(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)

        def _exec(self, path: str, query: dict[str, list[str]]) -> None:
            """`kubectl exec` (WebSocket, exec_stream): authorize, run the program in the pod
            under the server's lock, stream stdout/stderr and the status, close."""
            headers = _headers(self.headers)
            protocol = exec_stream.choose_protocol(self.headers.get("Sec-WebSocket-Protocol", ""))
            try:
                with server.lock:
                    pod, container, argv = server.api.exec_target(path, query, headers)
                if self.headers.get("Upgrade", "").lower() != "websocket" or protocol is None:
                    raise ApiError(400, "BadRequest", "Upgrade request required: this server speaks "
                                   f"pods/exec over WebSocket ({', '.join(exec_stream.PROTOCOLS)})")
            except ApiError as exc:
                server.record("create", self.path, exc.code)
                self._send(json_reply(exc.status(), exc.code))
                return
            try:
                with server.lock:
                    done = server.api.backend.exec(pod, argv, container)
                status = exec_stream.status_document(done["code"], argv)
                stdout, stderr = done["stdout"], done["stderr"]
            except BackendError as exc:
                status, stdout, stderr = exec_stream.failure_document(str(exc)), "", ""
            server.record("create", self.path, 101)
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", exec_stream.accept_key(self.headers.get("Sec-WebSocket-Key", "")))
            self.send_header("Sec-WebSocket-Protocol", protocol)
            self.end_headers()
            self.wfile.flush()
            with contextlib.suppress(OSError):
                exec_stream.stream_result(self.connection, stdout, stderr, status)
            self.close_connection = True

        def _watch(self, path: str, query_text: str, query: dict[str, list[str]], verb: str) -> None:
            """Stream WatchEvents: the objects that changed since the client's resourceVersion
            (all of them for a fresh watch), then any change while the watch is held."""
            try:
                with server.lock:
                    server.api.handle("GET", path, "", _headers(self.headers), b"")  # authorize, check path
                    target = parse_target(path)
                    assert target is not None
                    seen_rv = query.get("resourceVersion", [""])[0]
                    items = server.api.objects(target, query)
                    rv = server.api.resource_version
            except ApiError as exc:
                server.record(verb, self.path, exc.code)
                self._send(json_reply(exc.status(), exc.code))
                return
            server.record(verb, self.path, 200)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            known = {o["metadata"]["name"]: o for o in items}
            kind = "ADDED" if seen_rv in ("", "0") else "MODIFIED"
            try:
                if seen_rv != rv:
                    for obj in items:
                        self._event(kind, obj)
                hold = min(WATCH_HOLD_SECONDS, float(query.get("timeoutSeconds", [WATCH_HOLD_SECONDS])[0]))
                deadline = time.monotonic() + hold
                while time.monotonic() < deadline:
                    time.sleep(_WATCH_POLL_SECONDS)
                    with server.lock:
                        if server.api.resource_version == rv:
                            continue
                        rv = server.api.resource_version
                        fresh = {o["metadata"]["name"]: o for o in server.api.objects(target, query)}
                    for name, obj in fresh.items():
                        if name not in known:
                            self._event("ADDED", obj)
                        elif _changed(known[name], obj):
                            self._event("MODIFIED", obj)
                    for name, obj in known.items():
                        if name not in fresh:
                            self._event("DELETED", obj)
                    known = fresh
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

        def _event(self, kind: str, obj: dict[str, Any]) -> None:
            data = json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n"
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


def _changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    strip = lambda o: {**o, "metadata": {k: v for k, v in o["metadata"].items() if k != "resourceVersion"}}  # noqa: E731
    return strip(old) != strip(new)


def _headers(headers: Any) -> dict[str, str]:
    """Header names as HTTP means them, case-insensitive: one canonical spelling each."""
    return {name.title(): value for name, value in headers.items()}
