"""A MySQL server per mysql pod: the PostgreSQL server's SQLite core in MySQL's flavour.

Each MySQL database is an ATTACHed in-memory SQLite database of that name (as PostgreSQL schemas
are in `sqlstore.PgServer`), so `ts.orders` resolves as on MySQL; an unqualified table resolves
in attach order, which matches MySQL when table names are unique across databases (the twin's
apps give each service its own tables). Users, passwords and per-database grants are interpreted
here because SQLite has none. The container's env is the official image's (docker-library/mysql
`docker-entrypoint.sh` docker_setup_db: MYSQL_ROOT_PASSWORD for root, MYSQL_DATABASE created,
MYSQL_USER/MYSQL_PASSWORD created with `GRANT ALL ON <MYSQL_DATABASE>.*`), then the init script
(app.yaml `datastore.init`, MySQL dialect: backticks and `?` run as they are; `AUTO_INCREMENT`
and table options are translated).

Error numbers, SQLSTATEs and texts are MySQL 5.7's (Train Ticket's chart runs radondb/percona
5.7.34: FudanSELab/train-ticket `deployment/kubernetes-manifests/quickstart-k8s/charts/mysql/
values.yaml`), from mysql/mysql-server `share/errmsg-utf8.txt` (8.0 moved them to
`share/messages_to_clients.txt`, same texts): ER_ACCESS_DENIED_ERROR 1045/28000,
ER_DBACCESS_DENIED_ERROR 1044/42000, ER_BAD_DB_ERROR 1049/42000, ER_DUP_ENTRY 1062/23000
(5.7 names the key without its table: `for key 'PRIMARY'`), ER_NO_SUCH_TABLE 1146/42S02,
ER_TABLEACCESS_DENIED_ERROR 1142/42000, ER_BAD_FIELD_ERROR 1054/42S22, ER_BAD_NULL_ERROR
1048/23000, ER_PARSE_ERROR 1064/42000.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from pytest_marathon.twin.errors import SqlError
from pytest_marathon.twin.sqlstore import PgServer, split_statements

DEFAULT_PORT = 3306
_ALL = "ALL"
_CREATE_DB = re.compile(r"^CREATE\s+(?:DATABASE|SCHEMA)\s+(?:IF\s+NOT\s+EXISTS\s+)?`?(\w+)`?[^;]*$", re.I)
_CREATE_USER = re.compile(r"^CREATE\s+USER\s+(?:IF\s+NOT\s+EXISTS\s+)?'([^']*)'(?:@'[^']*')?\s+IDENTIFIED\s+BY\s+'([^']*)'\s*$", re.I)
_GRANT = re.compile(r"^GRANT\s+(.+?)\s+ON\s+`?(\w+|\*)`?\.\*\s+TO\s+'([^']*)'(?:@'[^']*')?\s*$", re.I)
_USE = re.compile(r"^USE\s+`?(\w+)`?\s*$", re.I)
_FLUSH = re.compile(r"^FLUSH\s+PRIVILEGES\s*$", re.I)
_UNQUALIFIED_TARGET = re.compile(r"^(CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?|INSERT\s+INTO\s+)(`?\w+`?)(\s*[(\s])", re.I)
_AUTO_PK = re.compile(r"\b(?:BIG|SMALL|TINY|MEDIUM)?INT(?:EGER)?(?:\(\d+\))?(?:\s+UNSIGNED)?(?:\s+NOT\s+NULL)?\s+AUTO_INCREMENT\s+PRIMARY\s+KEY", re.I)
_TABLE_OPTIONS = re.compile(r"\)\s*((?:ENGINE|DEFAULT\s+CHARSET|CHARSET|COLLATE|AUTO_INCREMENT)\s*=?\s*\w+\s*)+$", re.I)
_COMMANDS = ("select", "insert", "update", "delete")


def translate_mysql(sql: str) -> str:
    """MySQL DDL SQLite would refuse: `INT AUTO_INCREMENT PRIMARY KEY` is SQLite's rowid alias
    with AUTOINCREMENT; `ENGINE=InnoDB DEFAULT CHARSET=utf8` after the column list is dropped."""
    text = _AUTO_PK.sub("INTEGER PRIMARY KEY AUTOINCREMENT", sql.strip())
    return _TABLE_OPTIONS.sub(")", text)


class MySqlServer(PgServer):
    """One mysqld. `root` has every privilege; other users only the databases granted to them."""

    def __init__(self, root_password: str = "", database: str = "", user: str = "", password: str = "",
                 init_sql: str = "") -> None:
        super().__init__("root", root_password, database, "")
        self.databases: list[str] = []  # in creation (attach) order
        self.db_grants: dict[str, dict[str, set[str]]] = {}  # user -> database -> privileges
        self.threads_connected: set[str] = set()  # client pods holding a connection
        self.aborted_connects = 0
        self.commands = dict.fromkeys(_COMMANDS, 0)
        self._current = ""
        self._host = "%"
        self._params: tuple[Any, ...] = ()
        if database:
            self._create_database(database)
        if user:
            self.users[user] = password
            if database:
                self.db_grants.setdefault(user, {}).setdefault(database, set()).add(_ALL)
        for statement in split_statements(init_sql):
            self._admin(statement)
        self._current = ""

    def restart(self) -> None:
        """mysqld starts again on its data directory: the data, users and grants stay; the
        status counters (SHOW GLOBAL STATUS) and connections start from zero."""
        self.threads_connected.clear()
        self.aborted_connects = 0
        self.commands = dict.fromkeys(_COMMANDS, 0)
        self.xact_commit = self.xact_rollback = 0

    # --- init script ---------------------------------------------------------------------------------
    def _create_database(self, name: str) -> None:
        if name not in self.databases:
            self._db.execute(f"ATTACH DATABASE ':memory:' AS {name}")
            self.databases.append(name)

    def _admin(self, statement: str) -> None:
        if found := _CREATE_DB.match(statement):
            self._create_database(found.group(1))
        elif found := _CREATE_USER.match(statement):
            self.users[found.group(1)] = found.group(2)
        elif found := _GRANT.match(statement):
            privileges = {_ALL if p.strip().upper().startswith("ALL") else p.strip().upper()
                          for p in found.group(1).split(",")}
            self.db_grants.setdefault(found.group(3), {}).setdefault(found.group(2), set()).update(privileges)
        elif found := _USE.match(statement):
            self._current = found.group(1)
        elif _FLUSH.match(statement):
            pass
        else:
            text = translate_mysql(statement)
            if self._current:
                text = _UNQUALIFIED_TARGET.sub(lambda m: f"{m.group(1)}{self._current}.{m.group(2)}{m.group(3)}", text)
            self._db.execute(text)

    # --- privileges ----------------------------------------------------------------------------------
    def may_use(self, user: str, database: str) -> bool:
        grants = self.db_grants.get(user, {})
        return user == self.superuser or bool(grants.get(database) or grants.get("*"))

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, dbname: str | None, _src: str | None) -> int:
        privilege = {sqlite3.SQLITE_READ: "SELECT", sqlite3.SQLITE_INSERT: "INSERT",
                     sqlite3.SQLITE_UPDATE: "UPDATE", sqlite3.SQLITE_DELETE: "DELETE"}.get(action)
        if privilege is None or self._user == self.superuser or not arg1 or arg1.startswith("sqlite_"):
            return sqlite3.SQLITE_OK
        grants = self.db_grants.get(self._user, {})
        if dbname in (None, "main"):
            dbname = self._database_of(arg1)
        held = grants.get(dbname or "", set()) | grants.get("*", set())
        if _ALL in held or privilege in held:
            return sqlite3.SQLITE_OK
        self._denied = ("table", arg1, privilege)
        return sqlite3.SQLITE_DENY

    def _database_of(self, table: str) -> str:
        """The database an unqualified table resolves to (SQLite's authorizer leaves it out)."""
        for database in self.databases:
            found = self._db.execute(f"SELECT 1 FROM {database}.sqlite_master WHERE type='table' AND name=?", (table,))
            if found.fetchone():
                return database
        return self._current

    # --- sessions ------------------------------------------------------------------------------------
    def authenticate(self, user: str, password: str, database: str, host: str = "%") -> None:  # type: ignore[override]
        """mysql_native_password: an unknown user and a wrong password read the same
        (sql_authentication.cc); then the default database: no privilege on it is 1044 whether
        or not it exists, a database that does not exist is 1049 for a user who may use it."""
        if not user or self.users.get(user) != password:
            self.aborted_connects += 1
            using = "YES" if password else "NO"
            raise SqlError("28000", f"Access denied for user '{user}'@'{host}' (using password: {using})", "auth", 1045)
        if database and not self.may_use(user, database):
            self.aborted_connects += 1
            raise SqlError("42000", f"Access denied for user '{user}'@'{host}' to database '{database}'", "auth", 1044)
        if database and database not in self.databases:
            self.aborted_connects += 1
            raise SqlError("42000", f"Unknown database '{database}'", "server", 1049)

    def run_as(self, user: str, host: str, database: str, sql: str,
               params: tuple[Any, ...]) -> tuple[list[dict[str, Any]], int]:
        """One statement of a session on `database` from a client at `host`."""
        self._host, self._current, self._params = host, database, tuple(params)
        words = sql.strip().split(None, 1)
        command = words[0].lower() if words else ""
        if command in self.commands:
            self.commands[command] += 1
        return self.run(user, sql, params)

    def _translate(self, sql: str) -> str:
        return translate_mysql(sql)

    def _error(self, exc: sqlite3.Error, sql: str) -> SqlError:
        text = str(exc)
        if self._denied is not None or "not authorized" in text:
            _what, table, privilege = self._denied or ("table", "?", "SELECT")
            return SqlError("42000", f"{privilege} command denied to user '{self._user}'@'{self._host}' "
                                     f"for table '{table}'", "server", 1142)
        if found := re.match(r"no such table: (?:(\w+)\.)?(\w+)$", text):
            database = found.group(1) or self._current
            return SqlError("42S02", f"Table '{database}.{found.group(2)}' doesn't exist", "server", 1146)
        if found := re.match(r"(?:no such column: (?:\w+\.)?|table \w+ has no column named )(\w+)$", text):
            return SqlError("42S22", f"Unknown column '{found.group(1)}' in 'field list'", "server", 1054)
        if found := re.match(r"UNIQUE constraint failed: (.+)$", text):
            pairs = [c.strip().split(".", 1) for c in found.group(1).split(",")]
            table, cols = pairs[0][0], [p[-1] for p in pairs]
            entry = "-".join(str(v) for v in self._inserted(sql, cols))
            return SqlError("23000", f"Duplicate entry '{entry}' for key '{self._key_name(table, cols)}'", "server", 1062)
        if found := re.match(r"NOT NULL constraint failed: \w+\.(\w+)$", text):
            return SqlError("23000", f"Column '{found.group(1)}' cannot be null", "server", 1048)
        if found := re.match(r'near "(.+)": syntax error$', text):
            at = sql.find(found.group(1))
            near = sql[at:] if at >= 0 else found.group(1)
            return SqlError("42000", "You have an error in your SQL syntax; check the manual that corresponds to "
                                     f"your MySQL server version for the right syntax to use near '{near}' at line 1",
                            "server", 1064)
        return SqlError("HY000", text, "server", 1105)

    def _inserted(self, sql: str, columns: list[str]) -> list[Any]:
        """The values an `INSERT INTO t (cols) VALUES (?, ...)` gave the duplicate key's columns."""
        found = re.search(r"INSERT\s+INTO\s+[`\w.]+\s*\(([^)]*)\)\s*VALUES\s*\(([^)]*)\)", sql, re.I)
        if not found:
            return ["?"]
        names = [c.strip().strip("`") for c in found.group(1).split(",")]
        slots = [v.strip() for v in found.group(2).split(",")]
        params = iter(self._params)
        values: dict[str, Any] = {}
        for name, slot in zip(names, slots, strict=False):
            values[name] = next(params, "?") if slot == "?" else slot.strip("'")
        return [values.get(c, "?") for c in columns]

    def _key_name(self, table: str, columns: list[str]) -> str:
        """InnoDB's key names: `PRIMARY` for the primary key, else the index named after its first
        column (MySQL's default for an unnamed UNIQUE)."""
        for database in self.databases:
            info = self._db.execute(f'PRAGMA {database}.table_info("{table}")').fetchall()
            if info:
                pk = [row[1] for row in sorted(info, key=lambda r: r[5]) if row[5]]
                return "PRIMARY" if columns == pk else columns[0]
        return columns[0]
