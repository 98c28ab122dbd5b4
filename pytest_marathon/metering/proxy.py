"""The metering proxy: a loopback HTTP endpoint between the agents and the model providers.

The runner starts one per run. Agents get its base URLs (`ctx.model_base_urls`; `cmd:` programs
and the CLI presets get OPENAI_BASE_URL / ANTHROPIC_BASE_URL) and a placeholder key; the proxy
forwards each call to the upstream the user configured with the user's real credentials, so no
agent process ever holds them, reads the tokens from the provider's answer, prices them, and
refuses calls once the run's budget is spent. Its URLs carry a random per-run path prefix, so
other processes on the machine cannot spend the user's credit through it by guessing the port.

Routes (under `http://127.0.0.1:PORT/<run token>`):

* `/openai/v1/responses` (and `responses/compact`), `/openai/v1/chat/completions`: metered (JSON
  and SSE streams);
* `/anthropic/v1/messages`: metered (JSON and SSE streams);
* any other `/openai/v1/...` and `/anthropic/...` (models list, `count_tokens`, ...): forwarded
  with the credentials substituted, not counted, never refused;
* `GET /budget`: answered by the proxy itself, never forwarded: the run's `max_cost_usd` (null:
  no budget), `spent_usd` and `remaining_usd`, so an agent can degrade before it is refused
  (Orbit's budget ladder). The numbers come from metered answers only, so they are the same in
  every run given the same model answers.

Streams are forwarded event by event as they arrive. A Chat Completions stream is asked for its
usage chunk (`stream_options.include_usage`) when the client did not ask; that extra chunk is
read and not forwarded, so the client receives the stream it asked for.

With `ModelExchanges` (exchanges.py) the proxy also records every exchange of every route, metered
or not, as the upstream answered it; or, replaying, answers every route from the recording
instead of an upstream (no upstream, no credentials, no network) and meters the recorded answers
exactly as it metered the live ones.
"""

from __future__ import annotations

import json
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import replace
from typing import Any

import httpx2 as httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from pytest_marathon.metering.credentials import PLACEHOLDER_KEY, Upstream, upstreams_from_env
from pytest_marathon.metering.exchanges import ModelExchanges
from pytest_marathon.metering.ledger import InvocationMetering, Ledger, Ticket
from pytest_marathon.metering.prices import PriceTable, TokenCounts
from pytest_marathon.metering.recording import KEPT_HEADERS, Exchange, request_value
from pytest_marathon.metering.usage import Flavor, StreamUsage, split_events, usage_of_body

_AUTH_HEADERS = ("authorization", "x-api-key", "api-key")
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
    "accept-encoding",
    "content-encoding",
}
_UPSTREAM_TIMEOUT = httpx.Timeout(connect=15.0, read=600.0, write=60.0, pool=15.0)


class MeteringProxy:
    """The proxy on 127.0.0.1, served from a daemon thread; `base_urls` for the agents,
    `begin_invocation(n)` / `end_invocation()` around each invocation, `close()` at the end."""

    def __init__(
        self,
        prices: PriceTable,
        max_cost_usd: float | None,
        upstreams: Mapping[str, Upstream] | None = None,
        port: int = 0,
        exchanges: ModelExchanges | None = None,
    ) -> None:
        self.ledger = Ledger(prices, max_cost_usd)
        self.exchanges = exchanges
        if exchanges is not None and exchanges.replaying:
            self.upstreams: dict[str, Upstream] = {}  # replaying: no upstream, no credentials
        else:
            self.upstreams = dict(upstreams if upstreams is not None else upstreams_from_env())
        self._token = secrets.token_urlsafe(18)
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", port))
        host, bound = self._socket.getsockname()
        root = f"http://{host}:{bound}/{self._token}"
        self.base_urls: dict[str, str] = {
            "openai": f"{root}/openai/v1",
            "anthropic": f"{root}/anthropic",
        }
        if exchanges is not None:
            try:
                exchanges.open()
            except BaseException:
                self._socket.close()
                raise
        config = uvicorn.Config(
            _build_app(self._token, self.ledger, self.upstreams, exchanges),
            log_level="warning",
            lifespan="on",
            access_log=False,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name="marathon-metering-proxy",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + 10.0
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        if not self._server.started:
            self.close()
            raise RuntimeError(f"metering proxy did not start on {root}")

    def begin_invocation(self, n: int) -> None:
        self.ledger.begin_invocation(n)
        if self.exchanges is not None:
            self.exchanges.begin_invocation(n)

    def end_invocation(self) -> InvocationMetering:
        metering = self.ledger.end_invocation()
        mismatch = self.exchanges.end_invocation() if self.exchanges is not None else None
        return metering if mismatch is None else replace(metering, replay_mismatch=mismatch)

    @property
    def spent_usd(self) -> float:
        return self.ledger.spent_usd

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10.0)
        self._socket.close()
        if self.exchanges is not None:
            self.exchanges.close()

    def __enter__(self) -> MeteringProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _build_app(
    token: str,
    ledger: Ledger,
    upstreams: Mapping[str, Upstream],
    exchanges: ModelExchanges | None = None,
) -> Starlette:
    state: dict[str, httpx.AsyncClient] = {}
    replaying = exchanges is not None and exchanges.replaying

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if replaying:  # no client: a replayed run opens no connection
            yield
            return
        async with httpx.AsyncClient(timeout=_UPSTREAM_TIMEOUT) as client:
            state["client"] = client
            yield

    async def openai(request: Request) -> Response:
        rest = request.path_params["rest"]
        flavor: Flavor | None = _OPENAI_METERED.get(rest.strip("/"))
        return await _forward(request, "openai", f"/{rest}", flavor)

    async def anthropic(request: Request) -> Response:
        rest = request.path_params["rest"]
        flavor: Flavor | None = "anthropic" if rest.strip("/") == "v1/messages" else None
        return await _forward(request, "anthropic", f"/{rest}", flavor)

    async def budget(request: Request) -> Response:
        limit, spent = ledger.max_cost_usd, ledger.spent_usd
        remaining = None if limit is None else max(0.0, limit - spent)
        return JSONResponse({"max_cost_usd": limit, "spent_usd": spent, "remaining_usd": remaining})

    async def unknown(request: Request) -> Response:
        return JSONResponse(
            {"error": {"message": "pytest-marathon metering: unknown route", "type": "not_found"}},
            status_code=404,
        )

    async def _forward(request: Request, provider: str, path: str, flavor: Flavor | None) -> Response:
        body = await request.body()
        # the route under the run's token, as the agent addressed it (docs/model-recordings.md)
        query = f"?{request.url.query}" if request.url.query else ""
        route = f"{provider}{'/v1' if provider == 'openai' else ''}{path}{query}"
        hide_usage_chunk = False
        metered = flavor is not None and request.method == "POST"
        tap: _Tap | None = None
        if exchanges is not None:
            n, k = exchanges.position()
            tap = _Tap(exchanges, n, k, request.method, route, request_value(body), metered)
        requested_model = _requested_model(body)
        if metered and flavor == "chat":
            body, hide_usage_chunk = _ask_for_stream_usage(body)
        ticket: Ticket | None = None
        if metered:
            ticket = ledger.admit()
            if ticket is None:
                return _budget_refusal(provider, ledger.budget_message())
        answer: httpx.Response | _RecordedAnswer
        if replaying:
            assert exchanges is not None and tap is not None
            found = exchanges.answer(tap.n, tap.k, tap.method, tap.route, tap.request)
            if isinstance(found, str):
                if ticket is not None:
                    ledger.settle(ticket, None, None)
                return _error(provider, 400, "invalid_request_error", found)
            answer, tap, source = _RecordedAnswer(found), None, "the recording"
        else:
            upstream = upstreams[provider]
            source = f"upstream {upstream.base_url}"
            outgoing = state["client"].build_request(
                request.method, upstream.base_url + path + query, headers=_upstream_headers(request, upstream), content=body
            )
            try:
                answer = await state["client"].send(outgoing, stream=True)
            except httpx.HTTPError as exc:
                if ticket is not None:
                    ledger.settle(ticket, None, None)
                return _upstream_failure(provider, f"{source}: {exc}", tap)
            except BaseException:  # cancelled (the server stops): the call is over, uncounted tokens
                if ticket is not None:
                    ledger.settle(ticket, None, None)
                raise
        headers = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP}
        if ticket is None or flavor is None:
            call = _UpstreamCall(answer, tap=tap)
            return _ClosingStream(
                call, _passthrough(call), status_code=answer.status_code, headers=headers
            )
        if answer.headers.get("content-type", "").startswith("text/event-stream"):
            call = _UpstreamCall(answer, ledger, ticket, requested_model, tap=tap)
            stream = StreamUsage(flavor, hide_usage_chunk=hide_usage_chunk)
            return _ClosingStream(
                call, _metered_stream(call, stream), status_code=answer.status_code, headers=headers
            )
        try:
            content = await answer.aread()
        except httpx.HTTPError as exc:
            ledger.settle(ticket, None, None)
            return _upstream_failure(provider, f"{source}: {exc}", tap)
        except BaseException:
            ledger.settle(ticket, None, None)
            raise
        finally:
            await answer.aclose()
        if tap is not None:
            tap.finish(answer.status_code, answer.headers, content)
        model, tokens = None, None
        with suppress(ValueError):
            model, tokens = usage_of_body(flavor, json.loads(content))
        ledger.settle(ticket, model or requested_model, tokens)
        return Response(content, status_code=answer.status_code, headers=headers)

    async def _passthrough(call: _UpstreamCall) -> AsyncIterator[bytes]:
        try:
            async for chunk in call.answer.aiter_bytes():
                call.keep(chunk)
                yield chunk
        finally:
            await call.finish()

    async def _metered_stream(call: _UpstreamCall, stream: StreamUsage) -> AsyncIterator[bytes]:
        buffer = bytearray()
        try:
            async for chunk in call.answer.aiter_bytes():
                call.keep(chunk)
                buffer += chunk
                for event in split_events(buffer):
                    hide = stream.feed(event.data)
                    call.model, call.tokens = stream.model, stream.tokens
                    if not hide:
                        yield event.raw
            if buffer:
                yield bytes(buffer)
        finally:  # also when the client went away or the upstream broke: keep what was read
            await call.finish()

    routes = [
        Route(f"/{token}/openai/v1/{{rest:path}}", openai, methods=_METHODS),
        Route(f"/{token}/anthropic/{{rest:path}}", anthropic, methods=_METHODS),
        Route(f"/{token}/budget", budget, methods=["GET"]),
        Route("/{anything:path}", unknown, methods=_METHODS),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


#: Metered OpenAI routes (after `/openai/v1/`): Codex also compacts its context through
#: `responses/compact`, a model call billed like any Responses call.
_OPENAI_METERED: dict[str, Flavor] = {
    "responses": "responses",
    "responses/compact": "responses",
    "chat/completions": "chat",
}


class _Tap:
    """A request being recorded: where it was, what it asked; `finish` records the answer."""

    def __init__(
        self, exchanges: ModelExchanges, n: int, k: int, method: str, route: str,
        request: dict[str, Any], metered: bool,
    ) -> None:
        self.exchanges = exchanges
        self.n, self.k, self.method, self.route, self.request = n, k, method, route, request
        self.metered = metered

    def finish(self, status: int, headers: Mapping[str, str], content: bytes) -> None:
        kept = {name: headers[name] for name in KEPT_HEADERS if name in headers}
        self.exchanges.record(
            Exchange(
                self.n, self.k, self.method, self.route, self.request, status, kept, content,
                self.metered,
            )
        )


class _RecordedAnswer:
    """A recorded answer in the shape the proxy reads an upstream's: status, headers, bytes."""

    def __init__(self, exchange: Exchange) -> None:
        self.status_code = exchange.status
        self.headers = httpx.Headers(dict(exchange.headers))
        self._content = exchange.content

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        if self._content:
            yield self._content

    async def aread(self) -> bytes:
        return self._content

    async def aclose(self) -> None:
        return None


class _UpstreamCall:
    """An upstream answer being streamed to the client, and (for a metered call) its ticket.
    `finish` settles the ticket with the usage read so far, records the bytes read (when the
    run is recorded) and closes the upstream, once."""

    def __init__(
        self,
        answer: httpx.Response | _RecordedAnswer,
        ledger: Ledger | None = None,
        ticket: Ticket | None = None,
        requested_model: str | None = None,
        tap: _Tap | None = None,
    ) -> None:
        self.answer = answer
        self.ledger, self.ticket = ledger, ticket
        self.model: str | None = None
        self.tokens: TokenCounts | None = None
        self.requested_model = requested_model
        self.tap = tap
        self._received = bytearray()
        self._finished = False

    def keep(self, chunk: bytes) -> None:
        if self.tap is not None:
            self._received += chunk

    async def finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        if self.ledger is not None and self.ticket is not None:
            self.ledger.settle(self.ticket, self.model or self.requested_model, self.tokens)
        if self.tap is not None:
            self.tap.finish(self.answer.status_code, self.answer.headers, bytes(self._received))
        await self.answer.aclose()


class _ClosingStream(StreamingResponse):
    """A streamed answer that finishes its upstream call even when the body is never iterated
    (the client went away before the first byte), so no call stays in flight for ever."""

    def __init__(self, call: _UpstreamCall, content: AsyncIterator[bytes], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._call = call

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._call.finish()


_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def _upstream_headers(request: Request, upstream: Upstream) -> dict[str, str]:
    """The client's headers minus hop-by-hop ones, with the user's credentials in place of the
    placeholder. With no credentials of the user's for this provider, a client's own key (not the
    placeholder) passes through, so a local upstream without keys keeps working."""
    headers = {
        k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP
    }
    for name in list(headers):
        if name.lower() in _AUTH_HEADERS and (
            upstream.auth_headers or PLACEHOLDER_KEY in headers[name]
        ):
            del headers[name]
    headers.update(upstream.auth_headers)
    headers["accept-encoding"] = "identity"  # the proxy reads the usage out of the bytes
    return headers


def _ask_for_stream_usage(body: bytes) -> tuple[bytes, bool]:
    """A streaming Chat Completions request reports usage only when asked; ask, and say whether
    the client did not (then its usage chunk is read and not forwarded)."""
    try:
        data = json.loads(body)
    except ValueError:
        return body, False
    if not isinstance(data, dict) or not data.get("stream"):
        return body, False
    options = data.get("stream_options")
    options = dict(options) if isinstance(options, Mapping) else {}
    if options.get("include_usage"):
        return body, False
    options["include_usage"] = True
    data["stream_options"] = options
    return json.dumps(data).encode(), True


def _requested_model(body: bytes) -> str | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) else None


def _error(provider: str, status: int, kind: str, message: str) -> JSONResponse:
    """An error in the provider's own format, so its SDKs and CLIs report it as they would."""
    if provider == "anthropic":
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        body = {"error": {"message": message, "type": kind, "param": None, "code": kind}}
    # x-should-retry: the OpenAI and Anthropic SDKs retry 429s unless told not to
    return JSONResponse(body, status_code=status, headers={"x-should-retry": "false"})


def _upstream_failure(provider: str, message: str, tap: _Tap | None) -> JSONResponse:
    """The 502 a client gets when the upstream cannot be reached or breaks off its answer;
    recorded as the client got it, so a replay answers the same way."""
    failed = _error(provider, 502, "api_error", message)
    if tap is not None:
        tap.finish(failed.status_code, failed.headers, failed.body)
    return failed


def _budget_refusal(provider: str, message: str) -> JSONResponse:
    """OpenAI: 429 `insufficient_quota` (what it answers when an account's credit is spent);
    Anthropic: 402 `billing_error`. Neither is retried by their clients."""
    if provider == "anthropic":
        return _error(provider, 402, "billing_error", message)
    return _error(provider, 429, "insufficient_quota", message)
