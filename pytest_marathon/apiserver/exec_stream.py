"""`pods/exec` over WebSocket, the way kubectl 1.29+ speaks it (client-go
tools/remotecommand/websocket.go; apimachinery util/httpstream/wsstream/conn.go).

The client upgrades with `Sec-WebSocket-Protocol: v5.channel.k8s.io` (or v4); every binary
message starts with one channel byte: 0 stdin, 1 stdout, 2 stderr, 3 the error channel (a
metav1.Status as JSON: Success, or Failure with reason NonZeroExitCode and the code in
details.causes, as the kubelet's remotecommand server writes it), 4 resize; v5 adds 255, the
client's close of a channel. A non-interactive exec needs only the server's side: output, status,
close. kubectl falls back to SPDY only when the upgrade itself fails, so this is the one path.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import struct
from typing import Any

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 section 1.3
STDOUT, STDERR, ERROR = 1, 2, 3


def accept_key(key: str) -> str:
    return base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()


def choose_protocol(offered: str) -> str | None:
    names = [p.strip() for p in offered.split(",") if p.strip()]
    return next((p for p in PROTOCOLS if p in names), None)


def frame(payload: bytes, opcode: int = 0x2) -> bytes:
    """One unmasked, unfragmented frame (a server never masks, RFC 6455 section 5.1)."""
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([n])
    elif n < 1 << 16:
        head += bytes([126]) + struct.pack("!H", n)
    else:
        head += bytes([127]) + struct.pack("!Q", n)
    return head + payload


def status_document(code: int, argv: list[str]) -> dict[str, Any]:
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command {argv}, exit code {code}",
            "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


def failure_document(message: str) -> dict[str, Any]:
    """What the kubelet sends when the runtime could not start the process."""
    return {"metadata": {}, "status": "Failure",
            "message": f"Internal error occurred: error executing command in container: failed to exec in container: {message}",
            "reason": "InternalError", "details": {"causes": [{"message": message}]}, "code": 500}


def stream_result(sock: socket.socket, stdout: str, stderr: str, status: dict[str, Any]) -> None:
    """Send the output and the status, close, and drain whatever the client still sends."""
    out = b""
    if stdout:
        out += frame(bytes([STDOUT]) + stdout.encode())
    if stderr:
        out += frame(bytes([STDERR]) + stderr.encode())
    out += frame(bytes([ERROR]) + json.dumps(status).encode())
    out += frame(struct.pack("!H", 1000), opcode=0x8)
    sock.sendall(out)
    sock.settimeout(2.0)
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass
