"""A redis-like datastore server (redis-cart) and the client service code gets from `ctx.datastore`.

The server belongs to a pod (its data lives in the pod's emptyDir, lost when the pod is
replaced). The password is `requirepass` from the server's command line at start (the Secret
reaches it through `$(REDIS_PASSWORD)` in the container's args), so rotating the Secret only
bites clients whose pods started before the rotation; a `maxmemory` (none by default, as in
redis; the chaos fault sets one) makes writes fail with redis' own OOM error while used memory
(its own ~0.9 MB overhead plus the data) is over it.

The server keeps the statistics redis reports in `INFO` and redis_exporter turns into series
(oliver006/redis_exporter `exporter/info.go`: `commandstats` -> `redis_commands_failed_calls_total`
and `redis_commands_rejected_calls_total` per `cmd`, `errorstats` -> `redis_errors_total` per
`err`; `exporter/exporter.go`: `acl_access_denied_auth` -> `redis_acl_access_denied_auth_total`).
Redis counts an error raised before a command runs (NOAUTH, OOM) as a rejected call and one raised
while it runs (WRONGTYPE, a failed AUTH) as a failed call; a failed AUTH is no rejected connection
(`rejected_connections` counts only `maxclients` refusals, which the twin never reaches).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_marathon.twin.errors import RpcError

OOM_MESSAGE = "OOM command not allowed when used memory > 'maxmemory'."
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
NOAUTH = "NOAUTH Authentication required."
BASE_USED_BYTES = 900_000


class RedisServer:
    def __init__(self, password: str | None, maxmemory: int) -> None:
        self.password = password or None
        # Passwords still honoured after a rotation is rolled back (redis ACLs hold several per
        # user), so clients that picked up the rotated value keep working, as in a real rollback.
        self.also_accepted: set[str] = set()
        self.maxmemory = maxmemory
        self.data: dict[str, Any] = {}
        self.ttl: dict[str, int] = {}
        self.used_bytes = BASE_USED_BYTES
        # Each key's share of used_bytes, so a write re-sizes one key instead of the keyspace.
        self._sizes: dict[str, int] = {}
        self.failed_calls: dict[str, int] = {}
        self.rejected_calls: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        self.acl_access_denied_auth = 0
        self.connected_clients = 0

    def _count(self, table: dict[str, int], command: str, message: str) -> None:
        table[command] = table.get(command, 0) + 1
        err = message.split(" ", 1)[0]
        self.errors[err] = self.errors.get(err, 0) + 1

    def authenticate(self, password: str | None, command: str = "") -> None:
        """A client without the password gets NOAUTH on its command (rejected before it runs);
        a wrong password fails the client's AUTH (a failed call and an ACL auth denial)."""
        if self.password is None:
            return
        if not password:
            self._count(self.rejected_calls, _cmd(command), NOAUTH)
            raise RpcError("UNAUTHENTICATED", NOAUTH)
        if password != self.password and password not in self.also_accepted:
            self._count(self.failed_calls, "auth", WRONGPASS)
            self.acl_access_denied_auth += 1
            raise RpcError("UNAUTHENTICATED", WRONGPASS)

    def _guard_write(self, command: str) -> None:
        """Redis' noeviction policy: a write is refused while used memory is over maxmemory (the
        write that crosses it still lands), so the write that makes a value outgrow it fails."""
        if self.maxmemory and self.used_bytes > self.maxmemory:  # 0: no limit, redis' default
            self._count(self.rejected_calls, command, OOM_MESSAGE)
            raise RpcError("RESOURCE_EXHAUSTED", OOM_MESSAGE)

    def _resize(self, key: str) -> None:
        """used_bytes after a write to `key`: redis' INFO memory grows with each key's name and
        fields; the figure is the sum of per-key sizes, kept up to date one key at a time."""
        value = self.data.get(key)
        if value is None:
            size = 0
        elif isinstance(value, dict):
            size = 64 + len(key) + sum(48 + len(f) + len(v) for f, v in value.items())
        else:
            size = 64 + len(key) + len(value)
        before = self._sizes.pop(key, 0)
        if value is not None:
            self._sizes[key] = size
        self.used_bytes += size - before

    def execute(self, command: str, key: str, *args: str) -> Any:
        data = self.data
        if command == "get":
            value = data.get(key)
            return value if isinstance(value, str) or value is None else self._wrongtype(command)
        if command == "exists":
            return 1 if key in data else 0
        if command == "expire":
            # the TTL is kept, not enforced: carts expire after 60 minutes (astronomy cart's
            # ValkeyCartStore), while the user sessions that fill them last minutes
            if key not in data:
                return 0
            self.ttl[key] = int(float(args[0]))
            return 1
        if command == "hgetall":
            value = data.get(key, {})
            return dict(value) if isinstance(value, dict) else self._wrongtype(command)
        if command == "hget":
            value = data.get(key, {})
            return value.get(args[0]) if isinstance(value, dict) else self._wrongtype(command)
        if command == "set":
            self._guard_write(command)
            data[key] = args[0]
        elif command == "hset":
            value = data.get(key)
            if value is not None and not isinstance(value, dict):
                return self._wrongtype(command)
            self._guard_write(command)  # a refused HSET creates no key
            if value is None:
                value = data[key] = {}
            value[args[0]] = args[1]
        elif command == "delete":
            existed = 1 if data.pop(key, None) is not None else 0
            self._resize(key)
            return existed
        elif command == "hdel":
            value = data.get(key, {})
            removed = 1 if isinstance(value, dict) and value.pop(args[0], None) is not None else 0
            self._resize(key)
            return removed
        self._resize(key)
        return 1

    def _wrongtype(self, command: str) -> Any:
        message = "WRONGTYPE Operation against a key holding the wrong kind of value"
        self._count(self.failed_calls, _cmd(command), message)
        raise RpcError("FAILED_PRECONDITION", message)


def _cmd(command: str) -> str:
    """The redis command name `commandstats` reports (lower case; the client's `delete` is DEL)."""
    return "del" if command == "delete" else command


class DatastoreClient:
    """What `ctx.datastore(addr, password)` returns; every command may raise `RpcError`.

    Internals are underscore names so sandboxed code cannot reach past the redis commands.
    """

    __slots__ = ("_connect", "_password")

    def __init__(self, connect: Callable[[], RedisServer], password: str | None) -> None:
        self._connect = connect
        self._password = password

    def _run(self, command: str, key: Any, *args: Any) -> Any:
        server = self._connect()
        server.authenticate(self._password, command)
        return server.execute(command, str(key), *(str(a) for a in args))

    def get(self, key: str) -> str | None:
        return self._run("get", key)

    def set(self, key: str, value: Any) -> int:
        return self._run("set", key, value)

    def delete(self, key: str) -> int:
        return self._run("delete", key)

    def exists(self, key: str) -> int:
        return self._run("exists", key)

    def hget(self, key: str, field: str) -> str | None:
        return self._run("hget", key, field)

    def hgetall(self, key: str) -> dict[str, str]:
        return self._run("hgetall", key)

    def hset(self, key: str, field: str, value: Any) -> int:
        return self._run("hset", key, field, value)

    def hdel(self, key: str, field: str) -> int:
        return self._run("hdel", key, field)

    def expire(self, key: str, seconds: Any) -> int:
        return self._run("expire", key, seconds)
