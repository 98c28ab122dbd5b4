"""gRPC status errors as service code sees them (`ctx.RpcError`).

``str(err)`` is what Go's ``err.Error()`` prints (``rpc error: code = Unavailable desc = ...``), so
service code that logs ``f"could not retrieve cart: {err}"`` produces the real frontend message.
"""

from __future__ import annotations

GRPC_CODES: dict[str, int] = {
    "OK": 0,
    "CANCELLED": 1,
    "UNKNOWN": 2,
    "INVALID_ARGUMENT": 3,
    "DEADLINE_EXCEEDED": 4,
    "NOT_FOUND": 5,
    "ALREADY_EXISTS": 6,
    "PERMISSION_DENIED": 7,
    "RESOURCE_EXHAUSTED": 8,
    "FAILED_PRECONDITION": 9,
    "ABORTED": 10,
    "OUT_OF_RANGE": 11,
    "UNIMPLEMENTED": 12,
    "INTERNAL": 13,
    "UNAVAILABLE": 14,
    "DATA_LOSS": 15,
    "UNAUTHENTICATED": 16,
}


def go_code_name(code: str) -> str:
    """``DEADLINE_EXCEEDED`` → ``DeadlineExceeded`` (grpc-go's codes.Code.String(), which prints
    a number outside the table as ``Code(400)``)."""
    if code.startswith("Code("):
        return code
    return "".join(part.capitalize() for part in code.split("_"))


def code_number(code: str) -> int:
    """The status number of a code name, or of ``Code(n)``."""
    if code.startswith("Code("):
        return int(code[5:-1])
    return GRPC_CODES[code]


class RpcError(Exception):
    """A failed RPC: ``code`` is the gRPC code name, ``message`` the status description."""

    def __init__(self, code: str | int, message: str, *, from_call: bool = False) -> None:
        if isinstance(code, int) and not isinstance(code, bool):
            # grpc-js sends any integer `code` of the error a handler passes to its callback as
            # the status (serverErrorToStatus, packages/grpc-js/src/server-call.ts): upstream
            # paymentservice's card errors carry code 400
            names = {number: name for name, number in GRPC_CODES.items()}
            code = names.get(code, f"Code({code})")
        code = str(code) if str(code).startswith("Code(") else str(code).upper()
        if (code not in GRPC_CODES and not code.startswith("Code(")) or code == "OK":
            raise ValueError(f"unknown gRPC error code {code!r}; use one of {', '.join(sorted(GRPC_CODES)[1:])}")
        super().__init__(code, message)
        self.code = code
        self.message = str(message)
        # raised by a call the service made (not by its own ctx.fail): a client-side error
        self.from_call = from_call

    def __str__(self) -> str:
        return f"rpc error: code = {go_code_name(self.code)} desc = {self.message}"

    @property
    def status_number(self) -> int:
        return code_number(self.code)


HTTP_FAILURE_KINDS = ("refused", "nxdomain", "timeout", "reset", "canceled")


class HttpError(Exception):
    """An HTTP request that got no response (`ctx.http`): `kind` says why, `message` is what the
    caller's HTTP library prints (`twin/httptexts.py`). A response with any status is no error."""

    def __init__(self, kind: str, message: str) -> None:
        if kind not in HTTP_FAILURE_KINDS:
            raise ValueError(f"unknown HTTP failure kind {kind!r}; use one of {', '.join(HTTP_FAILURE_KINDS)}")
        super().__init__(message)
        self.kind = kind
        self.message = str(message)

    def __str__(self) -> str:
        return self.message


class SqlError(Exception):
    """A failed statement or connection: `sqlstate` (e.g. `42703`), `message` (the server's text,
    or the driver's for a connection failure) and `kind` (`server`, `auth`, `refused`,
    `nxdomain`, `timeout`). `str()` is the message. `code` is MySQL's error number (1045,
    1062, ...), 0 for PostgreSQL, which has none."""

    def __init__(self, sqlstate: str, message: str, kind: str = "server", code: int = 0) -> None:
        super().__init__(sqlstate, message, kind)
        self.sqlstate = str(sqlstate)
        self.code = int(code)
        self.message = str(message)
        self.kind = str(kind)

    def __str__(self) -> str:
        return self.message


MEMCACHE_FAILURE_KINDS = ("miss", "not_stored", "server_error", "client_error", "malformed_key", "no_servers",
                          "nxdomain", "refused", "timeout")


class MemcacheError(Exception):
    """A memcached operation that did not succeed (`ctx.memcached`): `kind` says why (a `miss` is
    the ordinary answer for an absent key, as gomemcache's `ErrCacheMiss` is), `message` is what
    the caller's client library prints (`twin/memcache_client.py`); `partial` holds the hits a
    multi-get still got from the servers that answered. `str()` is the message."""

    def __init__(self, kind: str, message: str, partial: dict[str, str] | None = None) -> None:
        if kind not in MEMCACHE_FAILURE_KINDS:
            raise ValueError(f"unknown memcache failure kind {kind!r}; use one of {', '.join(MEMCACHE_FAILURE_KINDS)}")
        super().__init__(message)
        self.kind = kind
        self.message = str(message)
        self.partial = dict(partial or {})
# `tls`: the server ended a plaintext connection (mongod in requireTLS)
MONGO_FAILURE_KINDS = ("server", "auth", "refused", "nxdomain", "timeout", "tls")


class MongoError(Exception):
    """A failed MongoDB operation (`ctx.mongo`): `code` (the server's error code, e.g. 13, 18,
    11000; 0 for a driver-side failure such as server selection), `message` (the calling driver's
    text, `twin/mongoclient.py`), `kind` (`server`, `auth`, `refused`, `nxdomain`, `timeout`, `tls`) and
    `code_name` (the server's codeName, e.g. `Unauthorized`). `str()` is the message."""

    def __init__(self, code: int, message: str, kind: str = "server", code_name: str = "") -> None:
        if kind not in MONGO_FAILURE_KINDS:
            raise ValueError(f"unknown MongoDB failure kind {kind!r}; use one of {', '.join(MONGO_FAILURE_KINDS)}")
        super().__init__(code, message, kind)
        self.code = int(code)
        self.message = str(message)
        self.kind = kind
        self.code_name = str(code_name)

    def __str__(self) -> str:
        return self.message
