"""Who is calling the twin's API: the agent under test, or the operator who runs the benchmark.

The policy (interface/policy.py) forbids an agent to touch the benchmark's own infrastructure
(the monitoring namespace, secrets); the person or backend operating the benchmark needs to.
A bearer token that only the operator's kubeconfig carries tells them apart; a request without
it, or with any other token, is the agent's.
"""

from __future__ import annotations

from collections.abc import Mapping

OPERATOR = "operator"
AGENT = "agent"


def identity_of(headers: Mapping[str, str], operator_token: str | None) -> str:
    """`OPERATOR` for `Authorization: Bearer <operator_token>`, `AGENT` otherwise."""
    return OPERATOR if bears(headers, operator_token) else AGENT


def bears(headers: Mapping[str, str], token: str | None) -> bool:
    """Whether the request carries `Authorization: Bearer <token>` (never, when no token is set);
    the one check behind the operator identity and the clock's token. The scheme is
    case-insensitive (RFC 7235), as a real API server reads it."""
    if not token:
        return False
    value = ""
    for key, val in headers.items():
        if key.lower() == "authorization":
            value = val
            break
    scheme, _, given = value.strip().partition(" ")
    return scheme.lower() == "bearer" and given.strip() == token
