"""The model double's HTTP server: loopback, threaded, started and stopped by a test.

Routes (request bodies are JSON; `"stream": true` answers with server-sent events sent in
chunked transfer encoding, as the real APIs do):

| route | API |
| --- | --- |
| `POST /v1/responses` | OpenAI Responses (Codex's `wire_api = "responses"`) |
| `POST /v1/chat/completions` | OpenAI Chat Completions |
| `POST /v1/messages` (any query, e.g. `?beta=true`) | Anthropic Messages (Claude Code) |
| `POST /v1/messages/count_tokens` | Anthropic token counting |
| `GET /v1/models` | a one-model list in the OpenAI shape |

Each model request is answered with the turn `script(conversation)` returns; every request (model
or not) is recorded as an `Exchange` with its headers, body, the turn and the usage reported, so
tests can assert what a client sent and what a proxy should have counted. Usage is a fixed
function of the sizes (input: request bytes / 4, output: turn bytes / 4), so a meter's counts can
be compared exactly. `fail_next` queues HTTP errors for the next model requests; `require_key`
answers 401 unless `Authorization: Bearer <key>` or `x-api-key: <key>` carries it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from . import wire_anthropic, wire_openai
from .conversation import Conversation, from_chat, from_messages, from_responses
from .script import SreScript, ToolCall, Turn

Script = Callable[[Conversation], Turn]


@dataclass
class Exchange:
    """One request the double received, and what it answered."""

    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any
    api: str = ""  # "responses" | "chat" | "messages" | "count_tokens" | "models" | ""
    stream: bool = False
    status: int = 200
    turn: Turn | None = None
    usage: tuple[int, int] = (0, 0)  # (input tokens, output tokens) reported in the answer
    tools: list[str] = field(default_factory=list)
    error: str = ""  # the script's exception, answered as HTTP 500


def _usage_for(raw: bytes, turn: Turn) -> tuple[int, int]:
    size = len(json.dumps(turn.arguments if isinstance(turn, ToolCall) else turn.text)) + (
        len(turn.name) if isinstance(turn, ToolCall) else 0
    )
    return max(1, len(raw) // 4), max(1, size // 4)


class ModelDouble:
    """`with ModelDouble() as double:` serves on 127.0.0.1 until the block ends."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        model: str = "double-1",
        require_key: str | None = None,
        stream_delay_s: float = 0.0,
    ) -> None:
        self.script: Script = script or SreScript()
        self.model = model
        self.require_key = require_key
        self.stream_delay_s = stream_delay_s
        self.exchanges: list[Exchange] = []
        self.fail_next: list[tuple[int, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle ---------------------------------------------------------------------------------
    def start(self) -> ModelDouble:
        handler = type("Handler", (_Handler,), {"double": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="model-double", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ModelDouble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "start the double first"
        return int(self._server.server_address[1])

    @property
    def openai_base_url(self) -> str:
        """As OPENAI_BASE_URL expects it (ends in /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """As ANTHROPIC_BASE_URL expects it (no /v1)."""
        return f"http://127.0.0.1:{self.port}"

    # what tests read ---------------------------------------------------------------------------
    def model_exchanges(self, api: str | None = None) -> list[Exchange]:
        with self._lock:
            return [
                e for e in self.exchanges
                if e.api in {"responses", "chat", "messages"} and (api is None or e.api == api)
            ]

    def tool_calls(self) -> list[str]:
        """Names of the tool calls the double answered with, in order."""
        return [e.turn.name for e in self.model_exchanges() if isinstance(e.turn, ToolCall)]

    # serving -----------------------------------------------------------------------------------
    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)

    def _decide(self, conv: Conversation) -> Turn:
        with self._lock:
            return self.script(conv)


class _Handler(BaseHTTPRequestHandler):
    double: ModelDouble
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet test output
        return

    # helpers -----------------------------------------------------------------------------------
    def _send_json(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, events: list[tuple[str | None, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for name, data in events:
            payload = data if isinstance(data, str) else json.dumps(data)
            frame = (f"event: {name}\n" if name else "") + f"data: {payload}\n\n"
            chunk = frame.encode()
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()
            if self.double.stream_delay_s:
                time.sleep(self.double.stream_delay_s)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _authorized(self) -> bool:
        key = self.double.require_key
        if key is None:
            return True
        return self.headers.get("x-api-key") == key or self.headers.get("Authorization") == f"Bearer {key}"

    # routes ------------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        path = urlsplit(self.path).path
        exchange = Exchange("GET", self.path, {k.lower(): v for k, v in self.headers.items()}, None)
        self.double._record(exchange)
        if path.rstrip("/") == "/v1/models":
            exchange.api = "models"
            model = {"id": self.double.model, "object": "model", "created": 0, "owned_by": "model-double"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            exchange.status = 404
            self._send_json(404, {"error": {"type": "not_found", "message": f"no route {path}"}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = urlsplit(self.path).path.rstrip("/")
        try:
            body = json.loads(raw or b"null")
        except json.JSONDecodeError:
            body = None
        exchange = Exchange("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        self.double._record(exchange)  # before answering: a client may look as soon as it has read
        self._answer(path, raw, body, exchange)

    def _answer(self, path: str, raw: bytes, body: Any, exchange: Exchange) -> None:
        readers = {"/v1/responses": from_responses, "/v1/chat/completions": from_chat, "/v1/messages": from_messages}
        if path == "/v1/messages/count_tokens":
            exchange.api = "count_tokens"
            self._send_json(200, {"input_tokens": max(1, len(raw) // 4)})
            return
        if path not in readers or not isinstance(body, Mapping):
            exchange.status = 404 if path not in readers else 400
            self._send_json(exchange.status, {"error": {"type": "invalid_request_error", "message": f"cannot serve {path}"}})
            return
        conv = readers[path](body)
        exchange.api, exchange.stream, exchange.tools = conv.api, bool(body.get("stream")), sorted(conv.tools)
        if not self._authorized():
            exchange.status = 401
            self._send_json(401, {"error": {"type": "authentication_error", "message": "invalid api key"}})
            return
        with self.double._lock:
            failure = self.double.fail_next.pop(0) if self.double.fail_next else None
        if failure is not None:
            exchange.status = failure[0]
            self._send_json(*failure)
            return
        try:
            turn = self.double._decide(conv)
        except Exception as exc:  # a broken script must show in the test, not as a dropped stream
            exchange.status, exchange.error = 500, f"{type(exc).__name__}: {exc}"
            self._send_json(500, {"error": {"type": "api_error", "message": f"model double script: {exchange.error}"}})
            return
        model = str(body.get("model") or self.double.model)
        exchange.turn, exchange.usage = turn, _usage_for(raw, turn)
        n = len(self.double.exchanges)
        if conv.api == "responses":
            if exchange.stream:
                self._send_events(wire_openai.responses_events(turn, n, model, exchange.usage))
            else:
                self._send_json(200, wire_openai.responses_json(turn, n, model, exchange.usage))
        elif conv.api == "chat":
            include = bool((body.get("stream_options") or {}).get("include_usage"))
            if exchange.stream:
                self._send_events(wire_openai.chat_events(turn, n, model, exchange.usage, include))
            else:
                self._send_json(200, wire_openai.chat_json(turn, n, model, exchange.usage))
        elif exchange.stream:
            self._send_events(wire_anthropic.message_events(turn, n, model, exchange.usage))
        else:
            self._send_json(200, wire_anthropic.message_json(turn, n, model, exchange.usage))
