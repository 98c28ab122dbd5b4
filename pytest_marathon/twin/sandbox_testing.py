"""Test double of the twin's call context, for services' own unit tests (``test_service.py``).

It stands in for what a unit test cannot have: other services (canned responses), a redis
(an in-memory store) and the log pipeline (captured lines). Test files import it as
``from testing import TestContext, raises``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class TestRpcError(Exception):
    """Same shape as the twin's ``RpcError``: a gRPC code name and a message."""

    __test__ = False

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class InMemoryDatastore:
    """The subset of a redis client the services use, with redis' return values."""

    def __init__(self) -> None:
        self.strings: dict[str, str] = {}
        self.hashes: dict[str, dict[str, str]] = {}
        self.ttl: dict[str, int] = {}

    def get(self, key: str) -> str | None:
        return self.strings.get(key)

    def set(self, key: str, value: Any) -> bool:
        self.strings[key] = str(value)
        return True

    def delete(self, *keys: str) -> int:
        removed = 0
        for key in keys:
            removed += int(self.strings.pop(key, None) is not None)
            removed += int(self.hashes.pop(key, None) is not None)
        return removed

    def exists(self, *keys: str) -> int:
        return sum(1 for key in keys if key in self.strings or key in self.hashes)

    def hget(self, key: str, name: str) -> str | None:
        return self.hashes.get(key, {}).get(name)

    def hgetall(self, key: str) -> dict[str, str]:
        return dict(self.hashes.get(key, {}))

    def hset(self, key: str, name: str | None = None, value: Any = None,
             mapping: dict[str, Any] | None = None) -> int:
        fields = dict(mapping or {})
        if name is not None:
            fields[name] = value
        target = self.hashes.setdefault(key, {})
        added = sum(1 for f in fields if f not in target)
        target.update({f: str(v) for f, v in fields.items()})
        return added

    def expire(self, key: str, seconds: Any) -> int:
        if not self.exists(key):
            return 0
        self.ttl[key] = int(float(seconds))
        return 1

    def hdel(self, key: str, *names: str) -> int:
        target = self.hashes.get(key, {})
        return sum(1 for name in names if target.pop(name, None) is not None)


class TestHttpError(Exception):
    """Same shape as the twin's ``HttpError``: a transport failure (``kind``: refused, nxdomain,
    timeout, reset, canceled) and the caller library's message."""

    __test__ = False

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class TestSqlError(Exception):
    """Same shape as the twin's ``SqlError``: a PostgreSQL sqlstate, the server's (or the driver's)
    message, and ``kind`` (server, refused, nxdomain, timeout, auth)."""

    __test__ = False

    def __init__(self, sqlstate: str, message: str, kind: str = "server") -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.message = message
        self.kind = kind


class CannedDatabase:
    """``ctx.sql(dsn)`` for unit tests: each statement gets the rows (or raises the error) of the
    first canned entry whose key occurs in its SQL text; ``statements`` records what ran."""

    def __init__(self, canned: dict[str, Any], statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        self.canned = canned
        self.statements = statements

    def _answer(self, sql: str, params: tuple[Any, ...]) -> Any:
        self.statements.append((sql, params))
        for key, answer in self.canned.items():
            if key in sql:
                if isinstance(answer, BaseException):
                    raise answer
                return answer(params) if callable(answer) else answer
        return []

    def query(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        return [dict(row) for row in self._answer(sql, params)]

    def execute(self, sql: str, *params: Any) -> int:
        answer = self._answer(sql, params)
        return answer if isinstance(answer, int) else len(answer)


class KafkaProducerDouble:
    """``ctx.kafka(addr)`` for unit tests: ``send`` appends to the context's ``sent`` list."""

    def __init__(self, ctx: TestContext) -> None:
        self.ctx = ctx

    def send(self, topic: str, value: Any, key: str | None = None, headers: dict[str, str] | None = None) -> int:
        if self.ctx.kafka_error is not None:
            raise TestRpcError(*self.ctx.kafka_error)
        self.ctx.sent.append((topic, value, key))
        return len(self.ctx.sent) - 1


class TestExit(Exception):  # noqa: N818 - mirrors the twin's ``ctx.Exit``
    """``raise ctx.Exit(code)``: the process exits on purpose (after log.Fatalf)."""

    def __init__(self, code: int = 1) -> None:
        super().__init__(code)
        self.code = code


class TestContext:
    """A ``ctx`` for unit tests.

    ``responses`` maps a method name to a response dict, a callable ``request -> response`` or an
    exception to raise; ``datastore_error`` (e.g. ``("UNAVAILABLE", "...")``) makes the datastore
    unreachable. ``calls``, ``logs``, ``work_ms`` and ``slept_ms`` record what the code did.
    """

    __test__ = False
    RpcError = TestRpcError
    HttpError = TestHttpError
    SqlError = TestSqlError
    Exit = TestExit

    def __init__(self, env: dict[str, str] | None = None,
                 responses: dict[str, Any] | None = None, flags: dict[str, Any] | None = None,
                 now: float = 0.0, request_id: str = "req-test-1",
                 datastore_error: tuple[str, str] | None = None, http: dict[str, Any] | None = None,
                 sql: dict[str, Any] | None = None, kafka_error: tuple[str, str] | None = None) -> None:
        self.environment = dict(env or {})
        self.responses = dict(responses or {})
        self.flags = dict(flags or {})
        self.now = now
        self.request_id = request_id
        self.datastore_error = datastore_error
        self.calls: list[dict[str, Any]] = []
        self.logs: list[tuple[str, str]] = []
        self.work_ms = 0.0
        self.slept_ms = 0.0
        self.stores: dict[str, InMemoryDatastore] = {}
        self.http_responses = dict(http or {})
        self.sql_canned = dict(sql or {})
        self.kafka_error = kafka_error
        self.sent: list[tuple[str, Any, str | None]] = []
        self.statements: list[tuple[str, tuple[Any, ...]]] = []
        self.requests: list[dict[str, Any]] = []

    def env(self, name: str, default: str | None = None) -> str | None:
        return self.environment.get(name, default)

    def flag(self, name: str, default: Any = None) -> Any:
        return self.flags.get(name, default)

    def call(self, addr: str, method: str, request: Any, timeout_ms: float | None = None) -> Any:
        self.calls.append({"addr": addr, "method": method, "request": request, "timeout_ms": timeout_ms})
        if method not in self.responses:
            raise TestRpcError("UNAVAILABLE", f"no canned response for {method}")
        canned = self.responses[method]
        if isinstance(canned, BaseException):
            raise canned
        if callable(canned):
            return canned(request)
        return canned

    def fail(self, code: str, message: str) -> None:
        raise TestRpcError(code, message)

    def log(self, level: str, message: str) -> None:
        self.logs.append((level, message))

    def work(self, ms: float) -> None:
        self.work_ms += ms

    def sleep(self, ms: float) -> None:
        self.slept_ms += ms

    def datastore(self, addr: str, password: str | None = None) -> InMemoryDatastore:
        if self.datastore_error is not None:
            raise TestRpcError(*self.datastore_error)
        return self.stores.setdefault(addr, InMemoryDatastore())

    def http(self, method: str, url: str, body: Any = None, timeout_ms: float | None = None) -> dict[str, Any]:
        """Canned by ``"METHOD /path"`` (the URL's path, without host or query)."""
        rest = url.split("://", 1)[-1]
        path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
        path = path.split("?", 1)[0]
        request = {"method": method, "url": url, "body": body, "timeout_ms": timeout_ms}
        self.requests.append(request)
        key = f"{method} {path}"
        if key not in self.http_responses:
            raise TestHttpError("refused", f"no canned response for {key}")
        canned = self.http_responses[key]
        if isinstance(canned, BaseException):
            raise canned
        if callable(canned):
            return canned(request)
        return dict(canned)

    def sql(self, dsn: str) -> CannedDatabase:
        return CannedDatabase(self.sql_canned, self.statements)

    def kafka(self, addr: str) -> KafkaProducerDouble:
        return KafkaProducerDouble(self)

    def methods_called(self) -> list[str]:
        return [call["method"] for call in self.calls]

    def logged(self, level: str | None = None) -> list[str]:
        return [message for lvl, message in self.logs if level is None or lvl == level]


class raises:  # noqa: N801 - reads like pytest.raises in test files
    """``with raises(ctx.RpcError) as err: ...`` then ``err.value.code``."""

    def __init__(self, expected: type[BaseException] | tuple[type[BaseException], ...],
                 match: Callable[[BaseException], bool] | None = None) -> None:
        self.expected = expected
        self.match = match
        self.value: BaseException | None = None

    def __enter__(self) -> raises:
        return self

    def __exit__(self, kind: Any, value: Any, _tb: Any) -> bool:
        if value is None:
            raise AssertionError(f"expected {self.expected} to be raised")
        if not isinstance(value, self.expected):
            return False
        self.value = value
        return True
