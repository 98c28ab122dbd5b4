"""Exceptions raised by the sandbox (kept apart so guards and the public API share them)."""

from __future__ import annotations


class SandboxError(Exception):
    """Base of everything the sandbox itself raises about service code."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SandboxRefusal(SandboxError):
    """The code is not allowed: refused at compile time, or an escape attempt caught at run time."""


class SandboxLimit(SandboxError):
    """A running call exceeded its step, recursion or allocation budget and was stopped.

    ``kind`` is ``steps``, ``recursion`` or ``allocation``; ``grpc_code`` is the status the twin
    reports for the callee (a runaway loop looks like a deadline, a huge allocation like exhaustion).
    """

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind

    @property
    def grpc_code(self) -> str:
        return "DEADLINE_EXCEEDED" if self.kind == "steps" else "RESOURCE_EXHAUSTED"


class UnknownMethod(LookupError):
    """``handle`` was asked for a method the service does not define (gRPC: UNIMPLEMENTED)."""
