"""The Service host an environment value points at, whatever form the program takes it in.

`cart:8080` (gRPC targets), `http://shipping:8080` (HTTP base URLs), `redis-cart:6379,password=x`
(StackExchange.Redis configuration strings), `postgres://u:p@postgresql/otel?sslmode=disable`
(lib/pq URLs), `Host=postgresql;Username=...` (Npgsql keyword strings) and a bare host name
(FLAGD_HOST) all name one Service; the cluster DNS suffixes are dropped.
"""

from __future__ import annotations

from urllib.parse import urlsplit

#: env names that carry an address (the rest of a container's env is settings)
ADDRESS_SUFFIXES = ("_ADDR", "_HOST")
ADDRESS_NAMES = ("DB_CONNECTION_STRING",)


def is_address_var(name: str) -> bool:
    return name.endswith(ADDRESS_SUFFIXES) or name in ADDRESS_NAMES


def host_of(value: str) -> str:
    """The first DNS label of the host `value` names ('' when it names none)."""
    value = value.strip()
    if "://" in value:
        host = urlsplit(value).hostname or ""
    elif "=" in value.split(",", 1)[0] and ";" in value or value.lower().startswith("host="):
        pairs = dict(part.split("=", 1) for part in value.split(";") if "=" in part)
        host = next((v for k, v in pairs.items() if k.strip().lower() in ("host", "server")), "")
    else:
        host = value.split(",", 1)[0].rsplit(":", 1)[0] if ":" in value.split(",", 1)[0] else value.split(",", 1)[0]
    return host.split(".", 1)[0]
