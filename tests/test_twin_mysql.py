"""MySQL in the twin: `ctx.sql` with a JDBC URL on a server per mysql pod, MySQL 5.7's error
numbers and texts in the Spring/Hibernate/HikariCP/Connector-J stack's words, outage, password
rotation and grant revocation, restarts with and without a volume, and the mysqld_exporter
series. Seen through the Twin's public API on the small app in tests/fixtures/apps/sqlshop."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_marathon.alerting import PromQLEngine
from pytest_marathon.backends.base import BackendError
from pytest_marathon.twin.engine import Twin

APPS = Path(__file__).parent / "fixtures" / "apps"
INSERT = "INSERT INTO orders (account_id, train_number, price, ref) VALUES (?, ?, ?, ?)"
NO_TX = ("org.springframework.transaction.CannotCreateTransactionException: Could not open JPA EntityManager for "
         "transaction; nested exception is org.hibernate.exception.JDBCConnectionException: Unable to acquire JDBC "
         "Connection")
POOL = "Caused by: java.sql.SQLTransientConnectionException: HikariPool-1 - Connection is not available, request " \
       "timed out after 30000ms."


def _twin(seed: int = 3, until: float = 60.0) -> Twin:
    twin = Twin("sqlshop", seed=seed, apps_dir=APPS)
    twin.advance_to(until)
    return twin


def _pod(twin: Twin, service: str):
    return next(p for p in sorted(twin.cluster.pods.values(), key=lambda p: p.name)
                if p.deployment == service and p.ready)


def _call(twin: Twin, request: dict) -> dict:
    from pytest_marathon.twin.runtime import _Trace
    code, message, response, _ms = twin.runtime.serve(_pod(twin, "ts-order-service"), "Query", request,
                                                      _Trace("0" * 32, "r", twin.now), "", 60_000.0)
    assert code == "OK", message
    return response


def _url(user: str, password: str, db: str = "ts", host: str = "ts-mysql") -> str:
    return f"jdbc:mysql://{host}:3306/{db}?user={user}&password={password}"


@pytest.fixture(scope="module")
def twin() -> Twin:
    return _twin()


def test_reads_and_writes_through_the_jdbc_url(twin: Twin) -> None:
    rows = _call(twin, {"sql": "SELECT account_id, ref FROM orders WHERE id <= 2 ORDER BY id"})["rows"]
    assert rows == [{"account_id": "a-1", "ref": "r-1"}, {"account_id": "a-2", "ref": "r-2"}]
    assert _call(twin, {"sql": INSERT, "params": ["a-9", "G9", 9.5, "r-write"], "execute": True}) == {"count": 1}
    assert _call(twin, {"sql": "SELECT `price` FROM `orders` WHERE ref = ?", "params": ["r-write"]})["rows"] == [
        {"price": 9.5}]


def test_duplicate_entry_is_1062_under_spring_data_integrity(twin: Twin) -> None:
    answer = _call(twin, {"sql": INSERT, "params": ["a", "G1", 1, "r-1"], "execute": True})
    assert (answer["code"], answer["sqlstate"]) == (1062, "23000")
    assert answer["message"] == (
        "org.springframework.dao.DataIntegrityViolationException: could not execute statement; SQL [n/a]; "
        "constraint [ref]; nested exception is org.hibernate.exception.ConstraintViolationException: could not "
        "execute statement\nCaused by: org.hibernate.exception.ConstraintViolationException: could not execute "
        "statement\nCaused by: java.sql.SQLIntegrityConstraintViolationException: Duplicate entry 'r-1' for key 'ref'")
    primary = _call(twin, {"sql": "INSERT INTO orders (id, account_id, train_number, price, ref) VALUES (?, ?, ?, ?, ?)",
                           "params": [1, "a", "G", 1, "r-new"], "execute": True})
    assert primary["message"].endswith("Duplicate entry '1' for key 'PRIMARY'")


def test_missing_table_column_and_null(twin: Twin) -> None:
    answer = _call(twin, {"sql": "SELECT * FROM seats"})
    assert (answer["code"], answer["sqlstate"]) == (1146, "42S02")
    assert answer["message"].startswith("org.springframework.dao.InvalidDataAccessResourceUsageException: could not "
                                        "extract ResultSet; SQL [n/a]; nested exception is")
    assert answer["message"].endswith("Caused by: java.sql.SQLSyntaxErrorException: Table 'ts.seats' doesn't exist")
    assert _call(twin, {"sql": "SELECT nope FROM orders"})["message"].endswith("Unknown column 'nope' in 'field list'")
    null = _call(twin, {"sql": INSERT, "params": [None, "G", 1, "r-null"], "execute": True})
    assert (null["code"], null["message"].rsplit(": ", 1)[1]) == (1048, "Column 'account_id' cannot be null")


def test_login_failures_wait_for_the_pool_and_name_the_client_ip(twin: Twin) -> None:
    ip = _pod(twin, "ts-order-service").ip
    answer = _call(twin, {"url": _url("ts", "wrong"), "sql": "SELECT 1"})
    assert (answer["code"], answer["sqlstate"], answer["kind"]) == (1045, "28000", "auth")
    assert answer["message"].split("\n") == [
        NO_TX, "Caused by: org.hibernate.exception.JDBCConnectionException: Unable to acquire JDBC Connection", POOL,
        f"Caused by: java.sql.SQLException: Access denied for user 'ts'@'{ip}' (using password: YES)"]
    # no password in the URL: Spring's SPRING_DATASOURCE_PASSWORD from the env
    assert _call(twin, {"url": "jdbc:mysql://ts-mysql:3306/ts?user=ts", "sql": "SELECT 1 AS x"}) == {"rows": [{"x": 1}]}
    assert _call(twin, {"url": _url("root", "root", "nodb"), "sql": "SELECT 1"})["message"].endswith(
        "Caused by: java.sql.SQLSyntaxErrorException: Unknown database 'nodb'")
    # a user without privileges on a database is refused it whether or not it exists
    assert _call(twin, {"url": _url("reader", "readerpw", "nodb"), "sql": "SELECT 1"})["message"].endswith(
        f"Access denied for user 'reader'@'{ip}' to database 'nodb'")


def test_grants_are_per_privilege(twin: Twin) -> None:
    ip = _pod(twin, "ts-order-service").ip
    reader = _url("reader", "readerpw")
    assert _call(twin, {"url": reader, "sql": "SELECT count(*) AS n FROM orders WHERE id <= 2"})["rows"] == [{"n": 2}]
    denied = _call(twin, {"url": reader, "sql": "DELETE FROM orders", "execute": True})
    assert (denied["code"], denied["message"].rsplit(": ", 1)[1]) == (
        1142, f"DELETE command denied to user 'reader'@'{ip}' for table 'orders'")


def test_outage_rotation_revoke_and_recovery_in_logs_requests_and_metrics() -> None:
    twin = _twin(5)
    engine = PromQLEngine(twin.store)
    assert engine.instant('mysql_up{instance="ts-mysql:3306"}', twin.now)[0]["value"] == 1.0
    assert engine.instant('mysql_global_status_threads_connected{instance="ts-mysql:3306"}', twin.now)[0]["value"] == 1
    selects = engine.instant('mysql_global_status_commands_total{instance="ts-mysql:3306",command="select"}', twin.now)
    assert selects[0]["value"] > 5
    handle = twin.chaos_start("datastore_outage", "ts-mysql")
    answer = _call(twin, {"sql": "SELECT 1"})
    assert answer["kind"] == "refused" and answer["message"].split("\n")[3:] == [
        "Caused by: com.mysql.cj.jdbc.exceptions.CommunicationsException: Communications link failure", "",
        "The last packet sent successfully to the server was 0 milliseconds ago. The driver has not received any "
        "packets from the server.", "Caused by: java.net.ConnectException: Connection refused (Connection refused)"]
    t0 = twin.now
    twin.advance_to(t0 + 60.0)
    assert engine.instant('mysql_up{instance="ts-mysql:3306"}', twin.now)[0]["value"] == 0.0
    assert any("Communications link failure" in e["message"] for e in twin.logs(service="ts-order-service", since=t0))
    twin.chaos_stop(handle)
    t1 = twin.now
    handle = twin.chaos_start("credential_rotation", "ts-mysql", user="ts", new_password="Rotated_1")
    assert _call(twin, {"sql": "SELECT 1 AS x"})["code"] == 1045
    twin.advance_to(t1 + 60.0)
    assert any("Access denied for user 'ts'" in e["message"] for e in twin.logs(service="ts-order-service", since=t1))
    aborted = engine.instant('mysql_global_status_aborted_connects{instance="ts-mysql:3306"}', twin.now)[0]["value"]
    assert aborted >= 1
    twin.chaos_stop(handle)
    assert _call(twin, {"sql": "SELECT 1 AS x"}) == {"rows": [{"x": 1}]}
    handle = twin.chaos_start("mysql_revoke_grants", "ts-mysql", user="ts")
    assert _call(twin, {"sql": "SELECT 1 AS x"})["message"].endswith(f"'ts'@'{_pod(twin, 'ts-order-service').ip}' "
                                                                     "to database 'ts'")
    twin.chaos_stop(handle)
    assert _call(twin, {"sql": "SELECT 1 AS x"}) == {"rows": [{"x": 1}]}
    with pytest.raises(BackendError, match="needs a mysql target"):
        twin.chaos_start("mysql_revoke_grants", "frontend", user="ts")
    with pytest.raises(BackendError, match="no running server with a user 'ghost'"):
        twin.chaos_start("mysql_revoke_grants", "ts-mysql", user="ghost")


def test_a_restart_keeps_data_and_the_rotated_password_only_with_a_volume() -> None:
    twin = _twin(7)
    for host in ("ts-mysql", "ts-mysql-novol"):
        url = _url("ts", "Ts_123456", host=host)
        assert _call(twin, {"url": url, "sql": INSERT, "params": ["k", "G", 1, "r-kept"], "execute": True}) == {"count": 1}
    twin.chaos_start("credential_rotation", "ts-mysql", user="reader", new_password="newpw")
    twin.chaos_start("pod_kill", "ts-mysql")
    twin.chaos_start("pod_kill", "ts-mysql-novol")
    twin.advance_to(twin.now + 30.0)
    kept = {"sql": "SELECT count(*) AS n FROM orders WHERE ref = 'r-kept'"}
    assert _call(twin, {**kept, "url": _url("ts", "Ts_123456")}) == {"rows": [{"n": 1}]}
    assert _call(twin, {**kept, "url": _url("ts", "Ts_123456", host="ts-mysql-novol")}) == {"rows": [{"n": 0}]}
    assert _call(twin, {"url": _url("reader", "newpw"), "sql": "SELECT 1 AS x"}) == {"rows": [{"x": 1}]}
