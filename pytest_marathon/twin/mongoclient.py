"""The client side of `ctx.mongo(uri)`: the connection string, the handle service code uses, and
failures in the calling driver's words.

Like the drivers it stands for, `ctx.mongo` connects lazily: `mongo.Connect` (Go) and a Spring
`MongoTemplate` build a client without touching the server, and each operation selects a server,
checks a pooled connection out (handshake and SCRAM authentication on a new one) and runs one
command. The twin does that for every operation, so a fault shows from the next operation on.

Texts, by the caller's language (`DeploymentSpec.language`):

* Go: go.mongodb.org/mongo-driver v1.12.1 (DeathStarBench `hotelReservation/go.mod`).
  `mongo.CommandError.Error()` is `(<codeName>) <errmsg>` (`mongo/errors.go`); a write error
  `write exception: write errors: [<errmsg>]` (`WriteException.Error`); a failed handshake
  `connection() error occurred during connection handshake: auth error: sasl conversation error:
  unable to authenticate using mechanism "<mech>": (AuthenticationFailed) Authentication failed.`
  (`x/mongo/driver/topology/errors.go` ConnectionError, `x/mongo/driver/auth/sasl.go`; seen
  verbatim from 1.x tools); no reachable server: after serverSelectionTimeoutMS (30 s default)
  `server selection error: server selection timeout, current topology: { Type: Unknown, Servers:
  [{ Addr: <host:port>, Type: Unknown, Last error: <dial error> }, ] }` (`x/mongo/driver/topology/
  topology.go` ServerSelectionError), `context deadline exceeded` / `context canceled` in place
  of `server selection timeout` when the caller's context ends first.
* Java/Kotlin (Spring Data MongoDB over the Java driver, Train Ticket's services): Spring's
  `MongoExceptionTranslator` (spring-data-mongodb `core/MongoExceptionTranslator.java`) turns
  code 13 into `PermissionDeniedDataAccessException`, 11000 into `DuplicateKeyException`,
  `MongoTimeoutException` into `DataAccessResourceFailureException`, anything else (the
  `MongoSecurityException` of a failed authentication) into `UncategorizedMongoDbException`;
  Spring 5's `NestedRuntimeException` message appends `; nested exception is <cause>`. The driver's
  own texts: `Command failed with error <code> (<codeName>): '<errmsg>' on server <host:port>. The
  full response is <json>` (`MongoCommandException`), `Exception authenticating MongoCredential{
  mechanism=null, userName='<u>', source='<db>', password=<hidden>, mechanismProperties=<hidden>}`
  (`MongoSecurityException`), `Timed out after 30000 ms while waiting to connect. Client view of
  cluster state is {type=UNKNOWN, servers=[{address=<host:port>, type=UNKNOWN, state=CONNECTING,
  exception={...}}]` (`MongoTimeoutException`, `BaseCluster`). Which 3.x/4.x driver Train Ticket
  pins was not checked (fidelity.md).
* C++/C (DeathStarBench socialNetwork's services over a `mongoc_client_pool_t`): mongo-c-driver
  1.15.0 (`LIB_MONGOC_VERSION` in socialNetwork `docker/thrift-microservice-deps/cpp/Dockerfile`);
  the handlers log `bson_error_t.message` (`UrlShortenHandler.h` `"MongoDB error: " <<
  error.message`), so the text is that message alone. A server's refusal is its `errmsg` as sent,
  a single write error's too (`mongoc-error.c`/`mongoc-rpc.c` `_mongoc_cmd_check_ok`,
  `mongoc-write-command.c` `_set_error_from_response`); a failed SCRAM conversation keeps the
  server's `Authentication failed.` (`mongoc-cluster.c` `_mongoc_cluster_auth_node_scram`); no
  reachable server: the pool's background scanner keeps the last scan's node errors, and selection
  gives up after serverSelectionTimeoutMS with `No suitable servers found: `serverSelectionTimeoutMS`
  expired: [<node error>]` (`mongoc-topology.c` mongoc_topology_select_server_id and
  _mongoc_server_selection_error, `mongoc-topology-scanner.c` _async_error_or_timeout and
  _mongoc_topology_scanner_finish). A C++ caller has no context to cancel, so `ended` does not
  apply.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from pytest_marathon.twin.errors import MongoError
from pytest_marathon.twin.mongostore import DEFAULT_PORT

SERVER_SELECTION_TIMEOUT_MS = 30_000.0  # both drivers' serverSelectionTimeoutMS default
JAVA = ("java", "kotlin")
CPP = ("cpp", "c")  # mongo-c-driver callers


@dataclass(frozen=True)
class MongoUri:
    host: str
    port: int
    user: str
    password: str
    auth_source: str
    database: str
    mechanism: str = ""
    tls: bool = False  # `tls=true` / `ssl=true` (connection string spec): plaintext otherwise

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"


@functools.lru_cache(maxsize=1024)
def parse_uri(uri: str) -> MongoUri:
    """`mongodb://[user:pass@]host[:port][/db][?authSource=..&authMechanism=..]` (connection string
    spec: the credentials' source is authSource, else the path's database, else `admin`); cached, as
    services open a client per request and the result is immutable. A bare
    `host:port` (mgo's dial string, what DeathStarBench's config carries) is taken as the host."""
    text = str(uri).strip()
    if not text.startswith("mongodb://"):
        text = "mongodb://" + text
    url = urlsplit(text)
    query = {k: v[-1] for k, v in parse_qs(url.query).items()}
    database = url.path.lstrip("/")
    try:
        port = url.port or DEFAULT_PORT
    except ValueError:
        port = -1
    return MongoUri(host=url.hostname or "localhost", port=port, user=unquote(url.username or ""),
                    password=unquote(url.password or ""),
                    auth_source=query.get("authSource") or database or "admin", database=database,
                    mechanism=query.get("authMechanism", ""),
                    tls=(query.get("tls") or query.get("ssl") or "").lower() == "true")


# --- texts ----------------------------------------------------------------------------------------------
def _dial_error(kind: str, ip: str, port: int, host: str) -> str:
    if kind == "nxdomain":
        return f"dial tcp: lookup {host} on 10.96.0.10:53: no such host"
    if kind == "timeout":
        return f"dial tcp {ip}:{port}: i/o timeout"
    return f"dial tcp {ip}:{port}: connect: connection refused"


def selection_failure(language: str, kind: str, uri: MongoUri, ip: str, ended: str = "") -> MongoError:
    """No server to run on. `ended`: the Go caller's context ran out first (`context deadline
    exceeded` or `context canceled`)."""
    if language in JAVA:
        cause = {
            "nxdomain": f"{{com.mongodb.MongoSocketException: {uri.host}}}, caused by {{java.net.UnknownHostException: "
                        f"{uri.host}}}",
            "timeout": "{com.mongodb.MongoSocketOpenException: Exception opening socket}, caused by "
                       "{java.net.SocketTimeoutException: connect timed out}",
        }.get(kind, "{com.mongodb.MongoSocketOpenException: Exception opening socket}, caused by "
                    "{java.net.ConnectException: Connection refused (Connection refused)}")
        text = (f"Timed out after {int(SERVER_SELECTION_TIMEOUT_MS)} ms while waiting to connect. Client view of "
                f"cluster state is {{type=UNKNOWN, servers=[{{address={uri.addr}, type=UNKNOWN, state=CONNECTING, "
                f"exception={cause}}}]")
        return MongoError(-3, _spring("org.springframework.dao.DataAccessResourceFailureException", text,
                                      "com.mongodb.MongoTimeoutException"), kind)
    if language in CPP:
        return MongoError(0, _c_selection_timeout(_c_node_error(kind, uri)), kind)
    last = "connection() error occurred during connection handshake: " + _dial_error(kind, ip, uri.port, uri.host)
    return MongoError(0, f"server selection error: {ended or 'server selection timeout'}, current topology: "
                         f"{{ Type: Unknown, Servers: [{{ Addr: {uri.addr}, Type: Unknown, Last error: {last} }}, ] }}",
                      kind)


def plaintext_refused(language: str, uri: MongoUri, connection: int, ended: str = "") -> MongoError:
    """A plaintext client against a mongod in requireTLS: the server closes each connection when
    the handshake's `hello` arrives, the server stays Unknown and selection runs out.

    Go (v1.12 `x/mongo/driver/topology/connection.go` readWireMessage): the read of the reply's
    header fails with io.EOF, `connection(<addr>[-<n>]) incomplete read of message header: EOF`
    (`ConnectionError`, the driver's negative pre-handshake connection id), inside the handshake's
    error as the dial errors above. Java (`com.mongodb.internal.connection.SocketStream`):
    `MongoSocketReadException: Prematurely reached end of stream` as the server's exception in the
    cluster description. C++: the scanner's `isMaster` meets the closed connection (below)."""
    if language in JAVA:
        text = (f"Timed out after {int(SERVER_SELECTION_TIMEOUT_MS)} ms while waiting to connect. Client view of "
                f"cluster state is {{type=UNKNOWN, servers=[{{address={uri.addr}, type=UNKNOWN, state=CONNECTING, "
                "exception={com.mongodb.MongoSocketReadException: Prematurely reached end of stream}}]")
        return MongoError(-3, _spring("org.springframework.dao.DataAccessResourceFailureException", text,
                                      "com.mongodb.MongoTimeoutException"), "tls")
    if language in CPP:
        # mongo-c-driver 1.15.0 `mongoc-async-cmd.c` _mongoc_async_cmd_phase_recv_len: the scanner's
        # `isMaster` reads 0 bytes where the reply's length header should be
        return MongoError(0, _c_selection_timeout(f"Server closed connection. calling ismaster on '{uri.addr}'"), "tls")
    last = (f"connection() error occurred during connection handshake: connection({uri.addr}[-{connection}]) "
            "incomplete read of message header: EOF")
    return MongoError(0, f"server selection error: {ended or 'server selection timeout'}, current topology: "
                         f"{{ Type: Unknown, Servers: [{{ Addr: {uri.addr}, Type: Unknown, Last error: {last} }}, ] }}",
                      "tls")


def auth_failure(language: str, uri: MongoUri, mechanism: str) -> MongoError:
    if language in JAVA:
        credential = (f"MongoCredential{{mechanism={uri.mechanism or 'null'}, userName='{uri.user}', "
                      f"source='{uri.auth_source}', password=<hidden>, mechanismProperties=<hidden>}}")
        return MongoError(18, _spring("org.springframework.data.mongodb.UncategorizedMongoDbException",
                                      f"Exception authenticating {credential}", "com.mongodb.MongoSecurityException"),
                          "auth", "AuthenticationFailed")
    if language in CPP:
        # mongo-c-driver 1.15.0 `mongoc-cluster.c` _mongoc_cluster_auth_node_scram: the failed
        # saslStart/saslContinue's errmsg is kept, only the domain and code become CLIENT/AUTHENTICATE
        return MongoError(18, "Authentication failed.", "auth", "AuthenticationFailed")
    return MongoError(18, "connection() error occurred during connection handshake: auth error: sasl conversation "
                          f'error: unable to authenticate using mechanism "{uri.mechanism or mechanism}": '
                          "(AuthenticationFailed) Authentication failed.", "auth", "AuthenticationFailed")


def server_failure(language: str, exc: MongoError, uri: MongoUri, write: bool) -> MongoError:
    """A command the server refused, in the driver's words (`code` and `code_name` kept)."""
    if language in JAVA:
        if exc.code == 11000 and write:
            text = _spring("org.springframework.dao.DuplicateKeyException", exc.message, "com.mongodb.MongoWriteException")
        else:
            response = json.dumps({"ok": 0.0, "errmsg": exc.message, "code": exc.code, "codeName": exc.code_name},
                                  ensure_ascii=False, separators=(", ", ": "))
            detail = (f"Command failed with error {exc.code} ({exc.code_name}): '{exc.message}' on server {uri.addr}. "
                      f"The full response is {response}")
            spring = ("org.springframework.dao.PermissionDeniedDataAccessException" if exc.code in (11, 13)
                      else "org.springframework.data.mongodb.UncategorizedMongoDbException")
            text = _spring(spring, detail, "com.mongodb.MongoCommandException")
        return MongoError(exc.code, text, "server", exc.code_name)
    if language in CPP:
        # mongo-c-driver 1.15.0: a command's `errmsg` (`mongoc-rpc.c` _mongoc_cmd_check_ok) and a lone
        # write error's (`mongoc-write-command.c` _set_error_from_response) are the message as sent
        return MongoError(exc.code, exc.message, "server", exc.code_name)
    if exc.code == 11000 and write:
        return MongoError(exc.code, f"write exception: write errors: [{exc.message}]", "server", exc.code_name)
    return MongoError(exc.code, f"({exc.code_name}) {exc.message}", "server", exc.code_name)


def _c_node_error(kind: str, uri: MongoUri) -> str:
    """The scanner node's last error (mongo-c-driver 1.15.0): a failed getaddrinfo is set on the node
    as is (`mongoc-topology-scanner.c` mongoc_topology_scanner_node_setup_tcp); a failed connect
    gets `<error> calling ismaster on '<host:port>'` (_async_error_or_timeout), the error being
    `connection refused` (a POLLHUP while sending, `mongoc-async.c`) or `connection timeout`
    (connectTimeoutMS passed while sending, `mongoc-async.c`)."""
    if kind == "nxdomain":
        return f"Failed to resolve '{uri.host}'"
    cause = "connection timeout" if kind == "timeout" else "connection refused"
    return f"{cause} calling ismaster on '{uri.addr}'"


def _c_selection_timeout(node_error: str) -> str:
    """A pooled client's selection after serverSelectionTimeoutMS (pooled clients never set
    serverSelectionTryOnce): the scanner's error is its nodes' errors, each in brackets
    (`mongoc-topology-scanner.c` _mongoc_topology_scanner_finish), after the timeout message
    (`mongoc-topology.c` _mongoc_server_selection_error `%s: %s`)."""
    return f"No suitable servers found: `serverSelectionTimeoutMS` expired: [{node_error}]"


def _spring(cls: str, message: str, cause: str) -> str:
    """A translated exception as a Java log line starts: `<class>: <message>; nested exception is
    <cause class>: <message>` (Spring 5 NestedRuntimeException)."""
    return f"{cls}: {message}; nested exception is {cause}: {message}"


# --- the handle service code gets ----------------------------------------------------------------------
Run = Callable[[str, dict[str, Any]], dict[str, Any]]


class MongoCollection:
    """One collection: find, find_one, count, insert_one, update_one/many, delete_one/many. Each
    call is one command on the server (`Run`); internals are underscore names the sandbox hides."""

    __slots__ = ("_run", "_db", "_name")

    def __init__(self, run: Run, db: str, name: str) -> None:
        self._run, self._db, self._name = run, db, name

    def find(self, filter: dict[str, Any] | None = None, sort: dict[str, int] | None = None,  # noqa: A002
             limit: int = 0) -> list[dict[str, Any]]:
        command: dict[str, Any] = {"find": self._name, "filter": dict(filter or {})}
        if sort:
            command["sort"] = dict(sort)
        if limit:
            command["limit"] = int(limit)
        return list(self._run(self._db, command)["cursor"]["firstBatch"])

    def find_one(self, filter: dict[str, Any] | None = None) -> dict[str, Any] | None:  # noqa: A002
        found = self.find(filter, limit=1)
        return found[0] if found else None

    def count(self, filter: dict[str, Any] | None = None) -> int:  # noqa: A002
        return int(self._run(self._db, {"count": self._name, "query": dict(filter or {})})["n"])

    def insert_one(self, document: dict[str, Any]) -> Any:
        """Inserts and returns the document's `_id` (generated when absent)."""
        return self._run(self._db, {"insert": self._name, "documents": [dict(document)]})["inserted_ids"][0]

    def update_one(self, filter: dict[str, Any], update: dict[str, Any], upsert: bool = False) -> dict[str, int]:  # noqa: A002
        return self._update(filter, update, upsert, False)

    def update_many(self, filter: dict[str, Any], update: dict[str, Any], upsert: bool = False) -> dict[str, int]:  # noqa: A002
        return self._update(filter, update, upsert, True)

    def _update(self, query: dict[str, Any], update: dict[str, Any], upsert: bool, multi: bool) -> dict[str, int]:
        result = self._run(self._db, {"update": self._name, "updates": [
            {"q": dict(query), "u": dict(update), "upsert": bool(upsert), "multi": multi}]})
        upserted = len(result["upserted"])
        return {"matched": result["n"] - upserted, "modified": result["nModified"], "upserted": upserted}

    def delete_one(self, filter: dict[str, Any]) -> int:  # noqa: A002
        return int(self._run(self._db, {"delete": self._name, "deletes": [{"q": dict(filter), "limit": 1}]})["n"])

    def delete_many(self, filter: dict[str, Any]) -> int:  # noqa: A002
        return int(self._run(self._db, {"delete": self._name, "deletes": [{"q": dict(filter), "limit": 0}]})["n"])


class MongoClient:
    """What `ctx.mongo(uri)` returns: `collection(db, name)`, or `collection(name)` in the URI's
    database."""

    __slots__ = ("_run", "_default_db")

    def __init__(self, run: Run, default_db: str) -> None:
        self._run, self._default_db = run, default_db

    def collection(self, db: str, name: str | None = None) -> MongoCollection:
        if name is None:
            db, name = self._default_db or "test", db
        return MongoCollection(self._run, str(db), str(name))
