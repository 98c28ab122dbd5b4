"""The client side of MySQL: JDBC URLs and failures in the words of a Spring Boot service.

Train Ticket's Java services (Spring Boot 2, Spring Data JPA over Hibernate 5, HikariCP, MySQL
Connector/J 8) take `spring.datasource.url: jdbc:mysql://<host>:3306/<db>?...` with the user and
password as separate properties (FudanSELab/train-ticket `deployment/kubernetes-manifests/
quickstart-k8s/yamls/deploy.yaml.sample`: each service's env comes from a `ts-<svc>-mysql`
Secret). Spring Boot binds `SPRING_DATASOURCE_USERNAME` / `SPRING_DATASOURCE_PASSWORD` from the
env (relaxed binding), which is where `ctx.sql` reads them when the URL has no `user=` /
`password=` (Connector/J's URL properties).

A failure reaches the service's code as Spring's exception, with its causes as logback prints
them (`Caused by: ...`, frames omitted):

* No connection (refused, unknown host, partitioned, access denied, unknown database): the pool
  (HikariCP `HikariPool.getConnection` -> `createTimeoutException`) waits `connectionTimeout`
  (HikariConfig default 30000 ms) while its adder keeps failing, then throws
  `SQLTransientConnectionException("HikariPool-1 - Connection is not available, request timed
  out after <ms>ms.")` with the driver's last failure as its cause. A repository method is
  transactional (Spring Data `SimpleJpaRepository`), so JpaTransactionManager.doBegin fails
  first: `CannotCreateTransactionException: Could not open JPA EntityManager for transaction;
  nested exception is org.hibernate.exception.JDBCConnectionException: Unable to acquire JDBC
  Connection` (spring-orm `JpaTransactionManager`; Hibernate `LogicalConnectionManagedImpl`).
* The driver's failures (mysql/mysql-connector-j `LocalizedErrorMessages.properties`
  CommunicationsException.20/ServerPacketsNotReceived; `SQLExceptionsMapping`: SQLSTATE class 23
  is SQLIntegrityConstraintViolationException, 42 SQLSyntaxErrorException, others SQLException).
* Statement errors through Hibernate and Spring's HibernateJpaDialect.convertHibernateAccessException
  (spring-orm 5): ConstraintViolationException -> DataIntegrityViolationException
  (`could not execute statement; SQL [n/a]; constraint [<key>]`), SQLGrammarException ->
  InvalidDataAccessResourceUsageException (`could not extract ResultSet` for a query, `could not
  execute statement` for DML).

Other callers' languages get go-sql-driver/mysql's `Error <n> (<state>): <text>` (errors.go
MySQLError.Error, v1.8) and its dial errors; nothing more is modelled for them.
"""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlsplit

from pytest_marathon.twin.errors import SqlError
from pytest_marathon.twin.mysqlstore import DEFAULT_PORT
from pytest_marathon.twin.sqlstore import Dsn

HIKARI_CONNECTION_TIMEOUT_MS = 30_000.0
POOL = "HikariPool-1"
_NO_TX = ("org.springframework.transaction.CannotCreateTransactionException: Could not open JPA EntityManager "
          "for transaction; nested exception is org.hibernate.exception.JDBCConnectionException: Unable to "
          "acquire JDBC Connection")
_LINK_FAILURE = ("com.mysql.cj.jdbc.exceptions.CommunicationsException: Communications link failure\n\n"
                 "The last packet sent successfully to the server was 0 milliseconds ago. The driver has not "
                 "received any packets from the server.")


#: A parsed JDBC URL has the fields of a PostgreSQL DSN (host, port, user, password, database).
JdbcUrl = Dsn


def is_jdbc_mysql(dsn: str) -> bool:
    return str(dsn).strip().startswith("jdbc:mysql://")


def parse_jdbc(url: str, env: dict[str, str]) -> JdbcUrl:
    """`jdbc:mysql://host[:port]/db?user=..&password=..`; credentials default to Spring's env."""
    split = urlsplit(str(url).strip()[len("jdbc:"):])
    query = {k: v[-1] for k, v in parse_qs(split.query).items()}
    user = query.get("user", env.get("SPRING_DATASOURCE_USERNAME", ""))
    password = query.get("password", env.get("SPRING_DATASOURCE_PASSWORD", ""))
    return JdbcUrl(host=split.hostname or "localhost", port=split.port or DEFAULT_PORT, user=unquote(str(user)),
                   password=unquote(str(password)), database=split.path.lstrip("/"))


def _jdbc_class(sqlstate: str) -> str:
    if sqlstate.startswith("23"):
        return "java.sql.SQLIntegrityConstraintViolationException"
    if sqlstate.startswith("42"):
        return "java.sql.SQLSyntaxErrorException"
    return "java.sql.SQLException"


def _dial_cause(kind: str, host: str) -> str:
    """The socket's failure under Connector/J's link failure (JDK 8 texts: Train Ticket's images
    run on openjdk 8)."""
    if kind == "nxdomain":
        return f"java.net.UnknownHostException: {host}"
    if kind == "timeout":
        return "java.net.ConnectException: Connection timed out (Connection timed out)"
    return "java.net.ConnectException: Connection refused (Connection refused)"


def connect_failure(language: str, kind: str, ip: str, port: int, host: str, waited_ms: float,
                    server_error: SqlError | None = None) -> SqlError:
    """A connection the client could not get: `kind` is a dial failure, or `server_error` the
    server's refusal (1045, 1044, 1049)."""
    if language not in ("java", "kotlin"):
        if server_error is not None:
            return SqlError(server_error.sqlstate, f"Error {server_error.code} ({server_error.sqlstate}): "
                                                   f"{server_error.message}", server_error.kind, server_error.code)
        if kind == "nxdomain":
            text = f"dial tcp: lookup {host} on 10.96.0.10:53: no such host"
        else:
            text = f"dial tcp {ip}:{port}: connect: connection {'timed out' if kind == 'timeout' else 'refused'}"
        return SqlError("08S01", text, kind)
    if server_error is not None:
        causes = [f"{_jdbc_class(server_error.sqlstate)}: {server_error.message}"]
        sqlstate, error_kind, code = server_error.sqlstate, server_error.kind, server_error.code
    else:
        causes = [_LINK_FAILURE, _dial_cause(kind, host)]
        sqlstate, error_kind, code = "08S01", kind, 0
    lines = [_NO_TX,
             "Caused by: org.hibernate.exception.JDBCConnectionException: Unable to acquire JDBC Connection",
             f"Caused by: java.sql.SQLTransientConnectionException: {POOL} - Connection is not available, "
             f"request timed out after {int(waited_ms)}ms.",
             *(f"Caused by: {c}" for c in causes)]
    return SqlError(sqlstate, "\n".join(lines), error_kind, code)


def statement_failure(language: str, error: SqlError, sql: str) -> SqlError:
    """A statement the server refused, as the caller's stack reports it."""
    if language not in ("java", "kotlin"):
        return SqlError(error.sqlstate, f"Error {error.code} ({error.sqlstate}): {error.message}", error.kind, error.code)
    query = sql.strip().upper().startswith("SELECT")
    what = "could not extract ResultSet" if query else "could not execute statement"
    jdbc = f"{_jdbc_class(error.sqlstate)}: {error.message}"
    if error.sqlstate.startswith("23"):
        key = error.message.rsplit("for key '", 1)[-1].rstrip("'") if error.code == 1062 else None
        top = (f"org.springframework.dao.DataIntegrityViolationException: {what}; SQL [n/a]; constraint [{key}]; "
               f"nested exception is org.hibernate.exception.ConstraintViolationException: {what}")
        cause = f"org.hibernate.exception.ConstraintViolationException: {what}"
    elif error.sqlstate.startswith("42"):
        top = (f"org.springframework.dao.InvalidDataAccessResourceUsageException: {what}; SQL [n/a]; "
               f"nested exception is org.hibernate.exception.SQLGrammarException: {what}")
        cause = f"org.hibernate.exception.SQLGrammarException: {what}"
    else:
        top = (f"org.springframework.orm.jpa.JpaSystemException: {what}; "
               f"nested exception is org.hibernate.exception.GenericJDBCException: {what}")
        cause = f"org.hibernate.exception.GenericJDBCException: {what}"
    return SqlError(error.sqlstate, "\n".join([top, f"Caused by: {cause}", f"Caused by: {jdbc}"]), error.kind, error.code)
