"""The memcached client of `ctx.memcached(servers)`, in the words of the caller's client library.

Why two libraries: DeathStarBench's Go services (hotelReservation) use bradfitz/gomemcache and
its C++ services (socialNetwork) libmemcached; an SRE reads their errors, which differ.

* Go (`gomemcache`, `memcache/memcache.go`, `memcache/selector.go`): the server list is resolved
  when the client is made (`ServerList.SetServers` calls `net.ResolveTCPAddr`; hotelReservation's
  `tune.NewMemCClient2` splits the config on `,` and panics on the error, `memcache.New` ignores
  it and is left with no servers: `ErrNoServers`, `memcache: no servers configured or
  available`). A key goes to the server `crc32(key) % n` picks. A dial error is returned as Go's
  net error (`dial tcp <ip>:<port>: connect: connection refused`); a dial that times out becomes
  `ConnectTimeoutError` (`memcache: connect timeout to <ip>:<port>`) after the client's
  `Timeout` (`DefaultTimeout` 500 ms; hotelReservation sets 2 s, `tune/setting.go`). The client
  takes no context: the request's deadline does not shorten the wait. Server answers: NOT_FOUND /
  a get with no value -> `ErrCacheMiss` (`memcache: cache miss`), NOT_STORED -> `ErrNotStored`
  (`memcache: item not stored`), a `CLIENT_ERROR` of incr -> `memcache: client error: <text>`,
  any other line -> `memcache: unexpected response line from "<verb>": "<line>"` (Go's %q). Keys
  over 250 bytes or with control characters or spaces fail before any I/O with
  `ErrMalformedKey`; `GetMulti` asks every server at once (the slowest answer bounds it) and
  returns the hits it got with an error of a server that failed (the twin: the last such server in
  list order; Go keeps whichever answer arrives last), never ErrCacheMiss.
* C++ (libmemcached, awesomized/libmemcached `src/libmemcached/strerror.cc`, `connect.cc`,
  `response.cc`, `get.cc`; Debian's libmemcached11 1.0.18 that socialNetwork's image installs is
  not verified): hosts resolve at connect (`getaddrinfo() or getnameinfo() HOSTNAME LOOKUP
  FAILURE`), a refused connect is `CONNECTION FAILURE`, an unanswered one `A TIMEOUT OCCURRED`
  after MEMCACHED_DEFAULT_CONNECT_TIMEOUT (4 s, `include/libmemcached-1.0/defaults.h`); answers
  `NOT FOUND`, `NOT STORED`, `ITEM TOO BIG` (SERVER_ERROR object too large), `SERVER FAILED TO
  ALLOCATE OBJECT` (SERVER_ERROR out of memory), `CLIENT ERROR`. Keys spread by
  one-at-a-time modulo n. `memcached_mget` succeeds when any server connected (keys of a server
  that did not are simply absent) and otherwise returns the last connect error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_marathon.twin.dataclients import _connect_data_server
from pytest_marathon.twin.errors import MemcacheError
from pytest_marathon.twin.memcache import KEY_MAX_LENGTH, gomemcache_pick, libmemcached_pick
from pytest_marathon.twin.runtime import NETWORK_MS

if TYPE_CHECKING:
    from pytest_marathon.twin.runtime import CallContext, Runtime

GOMEMCACHE_TIMEOUT_MS = 500.0  # memcache.go DefaultTimeout
LIBMEMCACHED_CONNECT_TIMEOUT_MS = 4000.0  # defaults.h MEMCACHED_DEFAULT_CONNECT_TIMEOUT
DEFAULT_PORT = 11211  # libmemcached MEMCACHED_DEFAULT_PORT
CLUSTER_DNS = "10.96.0.10:53"

GO_TEXTS = {
    "miss": "memcache: cache miss",
    "not_stored": "memcache: item not stored",
    "no_servers": "memcache: no servers configured or available",
    "malformed_key": "malformed: key is too long or contains invalid characters",
}
LIBMEMCACHED_TEXTS = {
    "miss": "NOT FOUND",
    "not_stored": "NOT STORED",
    "no_servers": "NO SERVERS DEFINED",
    "nxdomain": "getaddrinfo() or getnameinfo() HOSTNAME LOOKUP FAILURE",
    "refused": "CONNECTION FAILURE",
    "timeout": "A TIMEOUT OCCURRED",
    "client_error": "CLIENT ERROR",
    "SERVER_ERROR object too large for cache": "ITEM TOO BIG",
    "SERVER_ERROR out of memory storing object": "SERVER FAILED TO ALLOCATE OBJECT",
}


@dataclass(frozen=True)
class ServerRef:
    """One entry of the client's server list: the address dialled (Go dials the IP it resolved)."""

    addr: str
    ip: str
    port: int


def library_of(language: str) -> str:
    return "libmemcached" if language == "cpp" else "gomemcache"


def legal_key(key: str) -> bool:
    """gomemcache `legalKey`: at most 250 bytes, no byte <= ' ' and no DEL."""
    data = key.encode()
    return len(data) <= KEY_MAX_LENGTH and all(b > 0x20 and b != 0x7F for b in data)


def resolve_servers(rt: Runtime, text: str, library: str) -> tuple[list[ServerRef], str]:
    """(server list, SetServers' error text or '') for the client's configured servers."""
    refs: list[ServerRef] = []
    for entry in str(text).split(","):
        host, sep, port_text = entry.rpartition(":")
        if not sep:
            if library == "gomemcache":
                return [], f"address {entry}: missing port in address"
            host, port_text = entry, str(DEFAULT_PORT)
        port = int(port_text) if port_text.isdigit() else 0
        svc = rt.service_for(host)
        if library == "gomemcache" and (svc is None or not port_text.isdigit()):
            return [], f"lookup {host} on {CLUSTER_DNS}: no such host"
        refs.append(ServerRef(f"{host}:{port}", rt.cluster_ip(svc.name) if svc else "", port))
    return refs, ""


class MemcacheClient:
    """What `ctx.memcached(servers)` returns; misses and failures raise `ctx.MemcacheError`.
    Internals are underscore names so sandboxed code cannot reach past the commands."""

    __slots__ = ("_op",)

    def __init__(self, op: Callable[..., Any]) -> None:
        self._op = op

    def get(self, key: str) -> str:
        return self._op("get", [str(key)])[str(key)]

    def get_multi(self, keys: Any) -> dict[str, str]:
        return self._op("get_multi", [str(k) for k in keys])

    def set(self, key: str, value: Any, ttl: float = 0) -> None:
        self._op("set", [str(key)], str(value), float(ttl))

    def add(self, key: str, value: Any, ttl: float = 0) -> None:
        self._op("add", [str(key)], str(value), float(ttl))

    def delete(self, key: str) -> None:
        self._op("delete", [str(key)])

    def incr(self, key: str, delta: int = 1) -> int:
        return int(self._op("incr", [str(key)], "", 0.0, int(delta)))

    def decr(self, key: str, delta: int = 1) -> int:
        return int(self._op("decr", [str(key)], "", 0.0, int(delta)))


def open_client(rt: Runtime, ctx: CallContext, servers: str, timeout_ms: float | None, strict: bool) -> MemcacheClient:
    library = library_of(rt.spec.deployments[ctx._pod.deployment].language)
    refs, error = resolve_servers(rt, servers, library)
    if error and strict:
        raise MemcacheError("nxdomain", error)
    wait = float(timeout_ms) if timeout_ms is not None else (
        GOMEMCACHE_TIMEOUT_MS if library == "gomemcache" else LIBMEMCACHED_CONNECT_TIMEOUT_MS)

    def op(command: str, keys: list[str], value: str = "", ttl: float = 0.0, delta: int = 0) -> Any:
        return run(rt, ctx, library, refs, wait, command, keys, value, ttl, delta)

    return MemcacheClient(op)


def _text(library: str, kind: str, verb: str = "", line: str = "") -> str:
    if library == "libmemcached":
        return LIBMEMCACHED_TEXTS.get(line or kind, "SERVER ERROR")
    if kind == "client_error":
        return "memcache: client error: " + line.removeprefix("CLIENT_ERROR ")
    if kind == "server_error":
        return f'memcache: unexpected response line from "{verb}": "{line}\\r\\n"'
    return GO_TEXTS[kind]


def _connect(rt: Runtime, ctx: CallContext, library: str, ref: ServerRef, wait: float) -> tuple[Any, float, str, str]:
    """(server, ms, failure kind, failure text) of one connection from the caller's pod."""
    caller = ctx._pod
    server, pod, failure = _connect_data_server(rt, caller, ref.addr, rt.memcached)
    if failure is None:
        dep = rt.spec.deployments[pod.deployment]
        op_ms = float(dep.datastore.get("op_ms", 0.2))
        pod.cpu_demand += op_ms / 1000.0 * rt.weight
        server.clients.add(caller.name)
        return server, NETWORK_MS + op_ms + rt.edge(caller, pod).delay_ms, "", ""
    kind = failure.kind
    if library == "gomemcache":
        # the address was resolved when the client was made (so no nxdomain here): Go dials the IP
        where = f"{ref.ip}:{ref.port}"
        if kind == "timeout":
            return None, wait, kind, f"memcache: connect timeout to {where}"
        return None, NETWORK_MS, kind, f"dial tcp {where}: connect: connection refused"
    return None, (wait if kind == "timeout" else NETWORK_MS), kind, LIBMEMCACHED_TEXTS[kind]


def run(rt: Runtime, ctx: CallContext, library: str, refs: list[ServerRef], wait: float, command: str,
        keys: list[str], value: str, ttl: float, delta: int) -> Any:
    """One client call: key checks, server choice, connection, the server's answer."""
    go = library == "gomemcache"
    if not refs:
        raise MemcacheError("no_servers", _text(library, "no_servers"))
    pick = gomemcache_pick if go else libmemcached_pick
    if go and command not in ("set", "add") and not all(legal_key(k) for k in keys):
        raise MemcacheError("malformed_key", GO_TEXTS["malformed_key"])
    groups: dict[int, list[str]] = {}
    for key in keys:
        groups.setdefault(pick(key, len(refs)), []).append(key)
    if command == "get_multi":
        return _get_multi(rt, ctx, library, refs, wait, groups)
    ref = refs[next(iter(groups))]
    server, ms, kind, text = _connect(rt, ctx, library, ref, wait)
    ctx._elapsed_ms += ms
    if server is None:
        raise MemcacheError(kind, text)
    key, now = keys[0], ctx.now
    if command in ("set", "add"):
        if go and not legal_key(key):  # populateOne checks the key after dialling
            raise MemcacheError("malformed_key", GO_TEXTS["malformed_key"])
        line = server.store(command, key, value, ttl, now)
        if line == "NOT_STORED":
            raise MemcacheError("not_stored", _text(library, "not_stored"))
        if line != "STORED":
            raise MemcacheError("server_error", _text(library, "server_error", command, line))
        return None
    if command == "get":
        found = server.get([key], now)
        if key not in found:
            raise MemcacheError("miss", _text(library, "miss"))
        return found
    if command == "delete":
        if server.delete(key, now) == "NOT_FOUND":
            raise MemcacheError("miss", _text(library, "miss"))
        return None
    line = server.arithmetic(command == "incr", key, delta, now)
    if line == "NOT_FOUND":
        raise MemcacheError("miss", _text(library, "miss"))
    if line.startswith("CLIENT_ERROR"):
        raise MemcacheError("client_error", _text(library, "client_error", command, line))
    return line


def _get_multi(rt: Runtime, ctx: CallContext, library: str, refs: list[ServerRef], wait: float,
               groups: dict[int, list[str]]) -> dict[str, str]:
    """Every server asked at once: the call lasts as long as its slowest server."""
    found: dict[str, str] = {}
    slowest, failure, connected = 0.0, None, 0
    for index in sorted(groups):
        server, ms, kind, text = _connect(rt, ctx, library, refs[index], wait)
        slowest = max(slowest, ms)
        if server is None:
            failure = (kind, text)
            continue
        connected += 1
        found.update(server.get(groups[index], ctx.now))
    ctx._elapsed_ms += slowest
    if failure is not None and (library == "gomemcache" or connected == 0):
        raise MemcacheError(failure[0], failure[1], partial=found)
    return found
