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
    """``DEADLINE_EXCEEDED`` → ``DeadlineExceeded`` (grpc-go's codes.Code.String())."""
    return "".join(part.capitalize() for part in code.split("_"))


class RpcError(Exception):
    """A failed RPC: ``code`` is the gRPC code name, ``message`` the status description."""

    def __init__(self, code: str, message: str, *, from_call: bool = False) -> None:
        code = str(code).upper()
        if code not in GRPC_CODES or code == "OK":
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
        return GRPC_CODES[self.code]
