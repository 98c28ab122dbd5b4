"""A PostgreSQL server per postgres pod (SQLite in memory underneath) and the client of `ctx.sql`.

The server is one in-memory SQLite connection; each PostgreSQL schema is an ATTACHed in-memory
database of that name, so `catalog.products` and `accounting."order"` resolve as they do on
PostgreSQL. It is seeded from the app's init script (app.yaml `datastore.init`, relative to the
app folder), the twin's translation of upstream 2.2.0 `src/postgresql/init.sql`: statements SQLite
runs are run; `CREATE USER`, `CREATE SCHEMA` and `GRANT` are interpreted here (SQLite has neither
users nor privileges), so a wrong password and a missing privilege fail with PostgreSQL's texts.

The chart gives postgresql no volume (opentelemetry-helm-charts `charts/opentelemetry-demo/
values.yaml`, component `postgresql`; facts §4.9): each container start runs the init script on
an empty database, so the engine makes a new server at every start.

Server error texts and SQLSTATEs are PostgreSQL 17's (`src/backend/utils/errcodes.txt`;
messages from `src/backend/libpq/auth.c` `auth_failed`, `src/backend/parser/parse_relation.c`
`parserOpenTable` / `errorMissingColumn`, `src/backend/parser/scan.l` `scanner_yyerror`,
`src/backend/access/nbtree/nbtinsert.c` `_bt_check_unique`, `src/backend/catalog/aclchk.c`
`aclcheck_error`, `src/backend/executor/execMain.c` `ExecConstraints`,
`src/backend/utils/adt/ri_triggers.c` `ri_ReportViolation`).
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from pytest_marathon.twin.errors import SqlError

DEFAULT_PORT = 5432
CONNECT_KINDS = ("refused", "nxdomain", "timeout")


# --- DSNs -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Dsn:
    host: str
    port: int
    user: str
    password: str
    database: str

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"


_NPGSQL_KEYS = {
    # Npgsql's connection string keywords and synonyms (NpgsqlConnectionStringBuilder properties,
    # `src/Npgsql/NpgsqlConnectionStringBuilder.cs`), lower-cased and without spaces
    "host": "host", "server": "host", "port": "port",
    "username": "user", "userid": "user", "user": "user",
    "password": "password", "pwd": "password",
    "database": "database", "db": "database",
    # lib/pq's keyword form (`host=... user=... dbname=...`, lib/pq `conn.go` parseOpts)
    "dbname": "database",
}


def parse_dsn(dsn: str) -> Dsn:
    """`postgres://u:p@host[:port]/db?opts` (lib/pq URL form, `url.go` ParseURL), Npgsql's
    `Host=...;Username=...;Password=...;Database=...`, or lib/pq's `host=... user=...` form."""
    text = str(dsn).strip()
    if text.startswith(("postgres://", "postgresql://")):
        url = urlsplit(text)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        return Dsn(host=url.hostname or query.get("host", "localhost"), port=url.port or DEFAULT_PORT,
                   user=unquote(url.username or query.get("user", "")),
                   password=unquote(url.password or query.get("password", "")),
                   database=url.path.lstrip("/") or query.get("dbname", ""))
    fields: dict[str, str] = {}
    parts = text.split(";") if ";" in text or "=" not in text.replace(" ", "", 1) else re.findall(r"\S+=\S*", text)
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep:
            continue
        name = _NPGSQL_KEYS.get(key.strip().lower().replace(" ", ""))
        if name:
            fields[name] = value.strip().strip("'")
    user = fields.get("user", "")
    try:
        port = int(fields.get("port", DEFAULT_PORT))
    except ValueError:
        port = -1
    return Dsn(host=fields.get("host", "localhost"), port=port, user=user, password=fields.get("password", ""),
               database=fields.get("database", user))


# --- connection failures, in the caller's driver's words ------------------------------------------
def connect_failure(language: str, kind: str, ip: str, port: int, host: str) -> str:
    """The message a driver gives for a connection it cannot make.

    Go lib/pq (product-catalog) returns the net package's error unchanged (lib/pq `conn.go`
    `dial`; Go `net` `OpError.Error`): `dial tcp <ip>:<port>: connect: connection refused`,
    `dial tcp: lookup <host> on <dns>:53: no such host`; without `connect_timeout` the dial waits
    for the kernel's SYN retries: `connect: connection timed out`.
    .NET Npgsql (accounting) throws `NpgsqlException("Failed to connect to <endpoint>")` around the
    socket error (Npgsql `Internal/NpgsqlConnector.cs` `Connect`/`ConnectAsync`); a host that does
    not resolve surfaces the resolver's SocketException text (`Name or service not known`, glibc
    EAI_NONAME), a timeout `The operation has timed out.` (Npgsql's TimeoutException; not verified
    for Npgsql 8/9).
    """
    if language == "csharp":
        if kind == "nxdomain":
            return "Name or service not known"
        if kind == "timeout":
            return "The operation has timed out."
        return f"Failed to connect to {ip}:{port}"
    if kind == "nxdomain":
        return f"dial tcp: lookup {host} on 10.96.0.10:53: no such host"
    if kind == "timeout":
        return f"dial tcp {ip}:{port}: connect: connection timed out"
    return f"dial tcp {ip}:{port}: connect: connection refused"


# --- the server ------------------------------------------------------------------------------------
_PRIVILEGES = {sqlite3.SQLITE_READ: "SELECT", sqlite3.SQLITE_INSERT: "INSERT", sqlite3.SQLITE_UPDATE: "UPDATE",
               sqlite3.SQLITE_DELETE: "DELETE"}
_CREATE_USER = re.compile(r"^CREATE\s+(?:USER|ROLE)\s+(\w+)(?:\s+WITH)?(?:\s+LOGIN)?\s+PASSWORD\s+'([^']*)'\s*$", re.I)
_CREATE_SCHEMA = re.compile(r"^CREATE\s+SCHEMA\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s*$", re.I)
_GRANT_USAGE = re.compile(r"^GRANT\s+USAGE\s+ON\s+SCHEMA\s+(\w+)\s+TO\s+(\w+)\s*$", re.I)
_GRANT_TABLES = re.compile(r"^GRANT\s+([\w\s,]+?)\s+ON\s+ALL\s+TABLES\s+IN\s+SCHEMA\s+(\w+)\s+TO\s+(\w+)\s*$", re.I)


class PgServer:
    """One PostgreSQL server. `superuser`/`password`/`database` come from the container's env
    (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB: the postgres image's entrypoint creates them)."""

    def __init__(self, superuser: str = "postgres", password: str = "", database: str = "postgres",
                 init_sql: str = "") -> None:
        self.superuser = superuser
        self.users: dict[str, str] = {superuser: password}
        self.database = database
        self.schemas: set[str] = set()
        self.usage: dict[str, set[str]] = {}  # user -> schemas it may use
        self.grants: dict[str, set[tuple[str, str, str]]] = {}  # user -> {(schema, table, privilege)}
        self.xact_commit = 0
        self.xact_rollback = 0
        self.backends: set[str] = set()  # client pods holding a connection
        self._db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA foreign_keys = ON")
        self._user = superuser
        self._denied: tuple[str, str, str] | None = None
        self._db.set_authorizer(self._authorize)
        for statement in split_statements(init_sql):
            self._admin(statement)

    # --- init script ---------------------------------------------------------------------------------
    def _admin(self, statement: str) -> None:
        if found := _CREATE_USER.match(statement):
            self.users[found.group(1)] = found.group(2)
        elif found := _CREATE_SCHEMA.match(statement):
            schema = found.group(1).lower()
            self._db.execute(f"ATTACH DATABASE ':memory:' AS {schema}")
            self.schemas.add(schema)
        elif found := _GRANT_USAGE.match(statement):
            self.usage.setdefault(found.group(2), set()).add(found.group(1).lower())
        elif found := _GRANT_TABLES.match(statement):
            # ON ALL TABLES IN SCHEMA: the tables that exist now (PostgreSQL's semantics)
            privileges = {p.strip().upper() for p in found.group(1).split(",")}
            schema, user = found.group(2).lower(), found.group(3)
            tables = [row[0] for row in self._db.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type='table'")]
            for table in tables:
                for privilege in privileges:
                    self.grants.setdefault(user, set()).add((schema, table, privilege))
        else:
            self._db.execute(statement)

    # --- privileges ----------------------------------------------------------------------------------
    def _authorize(self, action: int, arg1: str | None, arg2: str | None, dbname: str | None, _src: str | None) -> int:
        privilege = _PRIVILEGES.get(action)
        if privilege is None or self._user == self.superuser or not arg1 or arg1.startswith("sqlite_"):
            return sqlite3.SQLITE_OK
        schema = "public" if dbname in (None, "main") else dbname
        if schema != "public" and schema not in self.usage.get(self._user, set()):
            self._denied = ("schema", schema, privilege)
            return sqlite3.SQLITE_DENY
        if (schema, arg1, privilege) not in self.grants.get(self._user, set()):
            self._denied = ("table", arg1, privilege)
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    # --- sessions ------------------------------------------------------------------------------------
    def authenticate(self, user: str, password: str, database: str) -> None:
        """scram-sha-256 for every host (the postgres image's pg_hba.conf `host all all all
        scram-sha-256`): an unknown user and a wrong password read the same (auth.c)."""
        if self.users.get(user) != password or not user:
            raise SqlError("28P01", f'password authentication failed for user "{user}"', "auth")
        if database != self.database:
            raise SqlError("3D000", f'database "{database}" does not exist', "server")

    def run(self, user: str, sql: str, params: tuple[Any, ...]) -> tuple[list[dict[str, Any]], int]:
        """One statement in its own transaction: (rows, rows affected)."""
        self._user, self._denied = user, None
        text = self._translate(sql)
        try:
            cursor = self._db.execute(text, tuple(params))
            columns = [d[0] for d in cursor.description or ()]
            rows = [dict(zip(columns, row, strict=False)) for row in cursor.fetchall()]
        except sqlite3.Error as exc:
            self.xact_rollback += 1
            raise self._error(exc, text) from None
        finally:
            self._user = self.superuser
        self.xact_commit += 1
        return rows, (cursor.rowcount if cursor.rowcount >= 0 else len(rows))

    def _translate(self, sql: str) -> str:
        """The statement as SQLite runs it (a MySQL flavour overrides this)."""
        return translate_placeholders(sql)

    def _error(self, exc: sqlite3.Error, sql: str) -> SqlError:
        """SQLite's failure in the server's words (a MySQL flavour overrides this)."""
        return self._pg_error(exc, sql)

    def _pg_error(self, exc: sqlite3.Error, sql: str) -> SqlError:
        text = str(exc)
        if self._denied is not None or "not authorized" in text:
            what, name, _privilege = self._denied or ("table", "?", "")
            return SqlError("42501", f"permission denied for {what} {name}")
        if found := re.match(r"no such column: (.+)$", text):
            name = found.group(1)
            # errorMissingColumn: a qualified reference prints as written, a bare one quoted
            return SqlError("42703", f"column {name} does not exist" if "." in name else f'column "{name}" does not exist')
        if found := re.match(r"table (\w+) has no column named (\w+)$", text):
            # an INSERT's target column (parse_target.c checkInsertTargets)
            table, column = found.groups()
            return SqlError("42703", f'column "{column}" of relation "{table}" does not exist')
        if found := re.match(r"no such table: (.+)$", text):
            return SqlError("42P01", f'relation "{found.group(1)}" does not exist')
        if found := re.match(r'near "(.+)": syntax error$', text):
            return SqlError("42601", f'syntax error at or near "{found.group(1)}"')
        if text in ("incomplete input",) or text.endswith("syntax error"):
            return SqlError("42601", "syntax error at end of input")
        if found := re.match(r"UNIQUE constraint failed: (.+)$", text):
            return SqlError("23505", f'duplicate key value violates unique constraint "{self._unique_name(found.group(1))}"')
        if found := re.match(r"NOT NULL constraint failed: (\w+)\.(\w+)$", text):
            table, column = found.groups()
            return SqlError("23502", f'null value in column "{column}" of relation "{table}" violates not-null constraint')
        if text.startswith("FOREIGN KEY constraint failed"):
            table = _target_table(sql)
            return SqlError("23503", f'insert or update on table "{table}" violates foreign key constraint '
                                     f'"{self._fkey_name(table)}"')
        if found := re.match(r"no such function: (\w+)$", text):
            return SqlError("42883", f"function {found.group(1)} does not exist")
        return SqlError("XX000", text)

    def _table_info(self, table: str) -> list[tuple[Any, ...]]:
        for schema in ("main", *sorted(self.schemas)):
            rows = self._db.execute(f'PRAGMA {schema}.table_info("{table}")').fetchall()
            if rows:
                return rows
        return []

    def _unique_name(self, columns: str) -> str:
        """PostgreSQL's default index names: `<table>_pkey` for the primary key,
        `<table>_<col>_key` for a UNIQUE column (`src/backend/commands/indexcmds.c` ChooseIndexName)."""
        pairs = [c.strip().split(".", 1) for c in columns.split(",")]
        table = pairs[0][0]
        cols = [p[1] for p in pairs if len(p) == 2]
        pk = [row[1] for row in sorted(self._table_info(table), key=lambda r: r[5]) if row[5]]
        if cols == pk:
            return f"{table}_pkey"
        return f"{table}_{'_'.join(cols)}_key"

    def _fkey_name(self, table: str) -> str:
        for schema in ("main", *sorted(self.schemas)):
            rows = self._db.execute(f'PRAGMA {schema}.foreign_key_list("{table}")').fetchall()
            if rows:
                return f"{table}_{rows[0][3]}_fkey"
        return f"{table}_fkey"

    def close(self) -> None:
        self._db.close()


def _target_table(sql: str) -> str:
    found = re.search(r"(?:INSERT\s+INTO|UPDATE)\s+(?:\w+\.)?\"?(\w+)\"?", sql, re.I)
    return found.group(1) if found else "?"


def split_statements(script: str) -> list[str]:
    """Statements of an SQL script: `--` comments dropped, split on `;` outside quotes."""
    statements, current, quote = [], [], ""
    i = 0
    while i < len(script):
        ch = script[i]
        if not quote and script.startswith("--", i):
            i = script.find("\n", i)
            if i < 0:
                break
            continue
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == ";":
            statements.append("".join(current).strip())
            current = []
            i += 1
            continue
        current.append(ch)
        i += 1
    statements.append("".join(current).strip())
    return [s for s in statements if s]


@functools.lru_cache(maxsize=1024)
def translate_placeholders(sql: str) -> str:
    """PostgreSQL's `$1..$n` become SQLite's numbered `?1..?n` (outside quoted text)."""
    out, quote = [], ""
    for i, ch in enumerate(sql):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "$" and i + 1 < len(sql) and sql[i + 1].isdigit():
            out.append("?")
            continue
        out.append(ch)
    return "".join(out)


def load_init_sql(app_path: Path, relative: str | None) -> str:
    """The init script app.yaml names (`datastore.init`), relative to the app folder."""
    if not relative:
        return ""
    return (app_path.parent / relative).read_text()


class SqlClient:
    """What `ctx.sql(dsn)` returns: `query(sql, *params) -> rows`, `execute(sql, *params) -> count`.
    Each statement reconnects through the runtime (refused, partitioned, auth). Internals are
    underscore names so sandboxed code cannot reach past the two methods."""

    __slots__ = ("_run",)

    def __init__(self, run: Callable[[str, tuple[Any, ...]], tuple[list[dict[str, Any]], int]]) -> None:
        self._run = run

    def query(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        return self._run(str(sql), params)[0]

    def execute(self, sql: str, *params: Any) -> int:
        return self._run(str(sql), params)[1]
