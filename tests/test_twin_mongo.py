"""MongoDB in the twin: `ctx.mongo` through a server per mongodb pod, the server's and the drivers'
texts (Go mongo-go-driver, Java Spring Data), the faults AIOpsLab injects on hotelReservation
(roles revoked, user dropped, auth missing) and their mitigation through the mongo shell, restart
semantics with and without a volume, and the mongodb_exporter series. Seen through the Twin's
public API on the small app in tests/fixtures/apps/mongoshop."""

from __future__ import annotations

import re
from contextlib import suppress
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_marathon.alerting import PromQLEngine
from pytest_marathon.backends.base import BackendError
from pytest_marathon.twin.engine import Twin
from pytest_marathon.twin.errors import MongoError
from pytest_marathon.twin.mongostore import MongoServer, initial_data

APPS = Path(__file__).parent / "fixtures" / "apps"
GEO_URI = "mongodb://admin:admin@mongodb-geo:27017/?authSource=admin"
ROOT = ["mongo", "admin", "-u", "root", "-p", "root", "--authenticationDatabase", "admin", "--quiet"]


def _twin(seed: int = 3, until: float = 60.0) -> Twin:
    twin = Twin("mongoshop", seed=seed, apps_dir=APPS)
    twin.advance_to(until)
    return twin


def _call(twin: Twin, service: str, request: dict) -> dict:
    """One RPC to a service's Query handler through the runtime (as a caller pod would)."""
    from pytest_marathon.twin.runtime import _Trace
    pod = next(p for p in sorted(twin.cluster.pods.values(), key=lambda p: p.name)
               if p.deployment == service and p.ready)
    code, message, response, _ms = twin.runtime.serve(pod, "Query", request, _Trace("0" * 32, "r", twin.now), "",
                                                      60_000.0)
    assert code == "OK", message
    return response


def _lsid(twin: Twin, service: str) -> str:
    from pytest_marathon.twin.mongostore import Uuid
    pod = next(p for p in sorted(twin.cluster.pods.values(), key=lambda p: p.name) if p.deployment == service)
    return Uuid.of(f"lsid/{pod.name}").text


def _errors_since(twin: Twin, t: float) -> float:
    return max((s.e for s in twin.sli_samples(since=t)), default=0.0)


@pytest.fixture(scope="module")
def twin() -> Twin:
    return _twin()


# --- reads and writes ------------------------------------------------------------------------------------
def test_find_filters_sort_and_limit(twin: Twin) -> None:
    def ids(request: dict) -> list[str]:
        return [d["hotelId"] for d in _call(twin, "geo", {"op": "find", **request})["result"]]

    assert ids({"filter": {"hotelId": {"$in": ["3", "1"]}}}) == ["1", "3"]
    assert ids({"filter": {"lat": {"$gt": 37.7854}}, "sort": {"lat": -1}}) == ["4", "1"]
    assert ids({"filter": {"lat": {"$gte": 37.7854, "$lt": 37.79}}}) == ["1", "2"]
    assert ids({"filter": {"lon": {"$lte": -122.4071}, "hotelId": {"$ne": "1"}}}) == ["3"]
    assert ids({"filter": {}, "sort": {"hotelId": -1}, "limit": 2}) == ["4", "3"]
    assert ids({"filter": {"hotelId": "9"}}) == []


def test_insert_update_upsert_delete_and_dotted_paths(twin: Twin) -> None:
    geo = {"coll": "scratch"}
    new_id = _call(twin, "geo", {**geo, "op": "insert", "doc": {"name": "a", "addr": {"city": "SF"}, "n": 1}})["result"]
    assert len(new_id) == 24
    assert _call(twin, "geo", {**geo, "op": "insert", "doc": {"_id": "b", "addr": {"city": "LA"}, "n": 5}}) == {"result": "b"}
    assert _call(twin, "geo", {**geo, "op": "find", "filter": {"addr.city": "SF"}})["result"][0]["_id"] == new_id
    assert _call(twin, "geo", {**geo, "op": "update", "filter": {"_id": "b"}, "update": {"$inc": {"n": 2},
                                                                                          "$set": {"addr.zip": "9"}}}) == \
        {"result": {"matched": 1, "modified": 1, "upserted": 0}}
    assert _call(twin, "geo", {**geo, "op": "find_one", "filter": {"_id": "b"}})["result"] == \
        {"_id": "b", "addr": {"city": "LA", "zip": "9"}, "n": 7}
    assert _call(twin, "geo", {**geo, "op": "update", "filter": {"_id": "c"}, "update": {"$set": {"n": 1}},
                               "upsert": True}) == {"result": {"matched": 0, "modified": 0, "upserted": 1}}
    assert _call(twin, "geo", {**geo, "op": "count", "filter": {"n": {"$gte": 1}}}) == {"result": 3}
    assert _call(twin, "geo", {**geo, "op": "delete", "filter": {"n": {"$lt": 5}}}) == {"result": 1}
    assert _call(twin, "geo", {**geo, "op": "update_many", "filter": {}, "update": {"$unset": {"addr": ""}}}) == \
        {"result": {"matched": 2, "modified": 1, "upserted": 0}}
    assert _call(twin, "geo", {**geo, "op": "find", "filter": {"addr": {"$exists": False}}, "sort": {"_id": 1}}) == \
        {"result": [{"_id": "b", "n": 7}, {"_id": "c", "n": 1}]}
    assert _call(twin, "geo", {**geo, "op": "update", "filter": {"_id": "c"}, "update": {"m": 2}})["result"] == \
        {"matched": 1, "modified": 1, "upserted": 0}
    assert _call(twin, "geo", {**geo, "op": "find_one", "filter": {"m": 2}})["result"] == {"_id": "c", "m": 2}
    assert _call(twin, "geo", {**geo, "op": "delete_many", "filter": {}}) == {"result": 2}


def test_a_duplicate_id_is_e11000_in_each_drivers_words(twin: Twin) -> None:
    text = 'E11000 duplicate key error collection: geo-db.geo index: _id_ dup key: { _id: "dup" }'
    assert _call(twin, "geo", {"op": "insert", "doc": {"_id": "dup"}}) == {"result": "dup"}
    assert _call(twin, "geo", {"op": "insert", "doc": {"_id": "dup"}}) == {
        "code": 11000, "message": f"write exception: write errors: [{text}]", "kind": "server",
        "code_name": "DuplicateKey"}
    java_text = 'E11000 duplicate key error collection: order-db.orders index: _id_ dup key: { _id: 7 }'
    assert _call(twin, "orders", {"op": "insert", "doc": {"_id": 7}}) == {"result": 7}
    assert _call(twin, "orders", {"op": "insert", "doc": {"_id": 7}})["message"] == (
        f"org.springframework.dao.DuplicateKeyException: {java_text}; nested exception is "
        f"com.mongodb.MongoWriteException: {java_text}")


# --- authentication ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("uri", "mechanism"), [
    ("mongodb://admin:wrong@mongodb-geo:27017/?authSource=admin", "SCRAM-SHA-256"),
    ("mongodb://nobody:x@mongodb-geo:27017/?authSource=admin", "SCRAM-SHA-1"),
    ("mongodb://admin:admin@mongodb-geo:27017/geo-db", "SCRAM-SHA-1"),  # authSource = the path's db
])
def test_a_failed_authentication_in_go(twin: Twin, uri: str, mechanism: str) -> None:
    assert _call(twin, "geo", {"uri": uri}) == {
        "code": 18, "kind": "auth", "code_name": "AuthenticationFailed",
        "message": "connection() error occurred during connection handshake: auth error: sasl conversation error: "
                   f'unable to authenticate using mechanism "{mechanism}": (AuthenticationFailed) Authentication failed.'}


def test_a_failed_authentication_in_java(twin: Twin) -> None:
    credential = ("MongoCredential{mechanism=null, userName='root', source='admin', password=<hidden>, "
                  "mechanismProperties=<hidden>}")
    answer = _call(twin, "orders", {"uri": "mongodb://root:nope@mongodb-order:27017/order-db?authSource=admin"})
    assert answer["message"] == (
        f"org.springframework.data.mongodb.UncategorizedMongoDbException: Exception authenticating {credential}; "
        f"nested exception is com.mongodb.MongoSecurityException: Exception authenticating {credential}")
    assert (answer["code"], answer["kind"]) == (18, "auth")


def test_a_wrong_password_fails_requests_with_the_drivers_text_in_logs() -> None:
    twin = _twin(5)
    assert twin.update_config("geo", env={"MONGO_URI": GEO_URI.replace("admin:admin", "admin:nope")}).ok
    twin.advance_to(150.0)
    assert twin.logs(service="geo", level="error", limit=1, contains=(
        'Failed get geo data: connection() error occurred during connection handshake: auth error: sasl '
        'conversation error: unable to authenticate using mechanism "SCRAM-SHA-256": (AuthenticationFailed) '
        'Authentication failed.'))
    assert _errors_since(twin, 120.0) > 0.2


def test_auth_missing_fails_every_command_as_unauthenticated() -> None:
    twin = _twin(6)
    assert _call(twin, "geo", {"uri": "mongodb://mongodb-geo:27017"}) == {
        "code": 13, "kind": "server", "code_name": "Unauthorized",
        "message": "(Unauthorized) command find requires authentication"}


def test_auth_from_the_images_root_env_and_springs_command_error() -> None:
    twin = _twin(6)
    detail = "command count requires authentication"
    response = (f'{{"ok": 0.0, "errmsg": "{detail}", "code": 13, "codeName": "Unauthorized"}}')
    text = (f"Command failed with error 13 (Unauthorized): '{detail}' on server mongodb-order:27017. "
            f"The full response is {response}")
    assert _call(twin, "orders", {"op": "count", "uri": "mongodb://mongodb-order:27017/order-db"}) == {
        "code": 13, "kind": "server", "code_name": "Unauthorized",
        "message": f"org.springframework.dao.PermissionDeniedDataAccessException: {text}; nested exception is "
                   f"com.mongodb.MongoCommandException: {text}"}


def test_without_auth_anyone_may_read() -> None:
    server = MongoServer(initial_data({"data": {"d": {"c": [{"_id": 1}]}}}), auth=False)
    assert server.run(None, "d", {"find": "c", "filter": {}})["cursor"]["firstBatch"] == [{"_id": 1}]


# --- AIOpsLab's faults and their mitigation -------------------------------------------------------------------
def test_revoked_role_is_unauthorized_and_the_shell_grants_it_back() -> None:
    twin = _twin(7)
    # AIOpsLab revoke-admin-geo-mongo.sh, run as admin in the mongodb-geo pod
    status, out, err = twin.mongo_shell("mongodb-geo", [
        "mongo", "admin", "-u", "admin", "-p", "admin", "--authenticationDatabase", "admin",
        "--eval", "db.revokeRolesFromUser('admin', [{role: 'readWrite', db: 'geo-db'}]);"])
    assert (status, err) == (0, "")
    assert out.startswith("MongoDB shell version v4.4.6\nconnecting to: mongodb://127.0.0.1:27017/admin?"
                          "authSource=admin&compressors=disabled&gssapiServiceName=mongodb\nImplicit session: "
                          'session { "id" : UUID("')
    assert out.endswith('") }\nMongoDB server version: 4.4.6\n')
    answer = _call(twin, "geo", {"op": "find", "filter": {"hotelId": "1"}})
    assert answer == {"code": 13, "kind": "server", "code_name": "Unauthorized", "message": (
        '(Unauthorized) not authorized on geo-db to execute command { find: "geo", filter: { hotelId: "1" }, '
        f'lsid: {{ id: UUID("{_lsid(twin, "geo")}") }}, $db: "geo-db" }}')}
    twin.advance_to(120.0)
    assert twin.logs(service="geo", level="error", contains="Failed get geo data: (Unauthorized) not authorized on "
                                                            "geo-db to execute command { find: \"geo\"", limit=1)
    assert _errors_since(twin, 90.0) > 0.2
    # the mitigation (revoke-mitigate-admin-geo-mongo.sh) as root
    status, out, err = twin.mongo_shell("mongodb-geo", [
        *ROOT, "--eval", "db.grantRolesToUser('admin', [{role: 'readWrite', db: 'geo-db'}]);"])
    assert (status, out, err) == (0, "", "")
    assert _call(twin, "geo", {"op": "count"}) == {"result": 4}
    twin.advance_to(180.0)
    assert _errors_since(twin, 135.0) == 0.0


def test_a_dropped_user_fails_authentication_until_created_again() -> None:
    twin = _twin(8)
    handle = twin.chaos_start("mongo_drop_user", "mongodb-geo", user="admin", db="admin")
    assert _call(twin, "geo", {"op": "count"})["code"] == 18
    assert 'mechanism "SCRAM-SHA-1"' in _call(twin, "geo", {"op": "count"})["message"]
    status, out, _err = twin.mongo_shell("mongodb-geo", [
        *ROOT, "--eval", "db.getSiblingDB('admin').createUser({user: 'admin', pwd: 'admin', "
                         "roles: [{role: 'readWrite', db: 'geo-db'}]})"])
    assert status == 0
    assert out == ('Successfully added user: {\n\t"user" : "admin",\n\t"roles" : [\n\t\t{\n\t\t\t"role" : '
                   '"readWrite",\n\t\t\t"db" : "geo-db"\n\t\t}\n\t]\n}\n')
    assert _call(twin, "geo", {"op": "count"}) == {"result": 4}
    twin.chaos_stop(handle)  # the fault's undo keeps the user created since
    assert _call(twin, "geo", {"op": "count"}) == {"result": 4}
    shown = twin.mongo_shell("mongodb-geo", [*ROOT, "--eval", "db.getUser('admin')"])[1]
    assert '"role" : "readWrite"' in shown and "userAdminAnyDatabase" not in shown


def test_revoke_roles_chaos_and_its_stop() -> None:
    twin = _twin(9)
    handle = twin.chaos_start("mongo_revoke_roles", "mongodb-geo", user="admin",
                              roles=[{"role": "readWrite", "db": "geo-db"}])
    assert _call(twin, "geo", {"op": "count"})["code"] == 13
    twin.chaos_stop(handle)
    assert _call(twin, "geo", {"op": "count"}) == {"result": 4}
    with pytest.raises(BackendError, match="no user 'ghost'"):
        twin.chaos_start("mongo_drop_user", "mongodb-geo", user="ghost")
    with pytest.raises(BackendError, match="needs a mongodb target"):
        twin.chaos_start("mongo_revoke_roles", "geo", user="admin")


# --- outage and restarts ---------------------------------------------------------------------------------------
def test_an_outage_is_a_server_selection_timeout() -> None:
    twin = _twin(11)
    handle = twin.chaos_start("datastore_outage", "mongodb-geo")
    ip = twin.runtime.cluster_ip("mongodb-geo")
    assert _call(twin, "geo", {"op": "count"}) == {"code": 0, "kind": "refused", "code_name": "", "message": (
        "server selection error: server selection timeout, current topology: { Type: Unknown, Servers: [{ Addr: "
        "mongodb-geo:27017, Type: Unknown, Last error: connection() error occurred during connection handshake: "
        f"dial tcp {ip}:27017: connect: connection refused }}, ] }}")}
    twin.chaos_start("datastore_outage", "mongodb-order")
    assert _call(twin, "orders", {"op": "count"})["message"] == (
        "org.springframework.dao.DataAccessResourceFailureException: Timed out after 30000 ms while waiting to "
        "connect. Client view of cluster state is {type=UNKNOWN, servers=[{address=mongodb-order:27017, "
        "type=UNKNOWN, state=CONNECTING, exception={com.mongodb.MongoSocketOpenException: Exception opening "
        "socket}, caused by {java.net.ConnectException: Connection refused (Connection refused)}}]; nested "
        "exception is com.mongodb.MongoTimeoutException: Timed out after 30000 ms while waiting to connect. "
        "Client view of cluster state is {type=UNKNOWN, servers=[{address=mongodb-order:27017, type=UNKNOWN, "
        "state=CONNECTING, exception={com.mongodb.MongoSocketOpenException: Exception opening socket}, caused by "
        "{java.net.ConnectException: Connection refused (Connection refused)}}]")
    status, out, _err = twin.mongo_shell("mongodb-geo", [*ROOT, "--eval", "db.getUsers()"])
    assert status == 1 and "Connection refused :\n" in out and out.endswith("exception: connect failed\n"
                                                                            "exiting with code 1\n")
    twin.advance_to(120.0)
    engine = PromQLEngine(twin.store)
    assert {r["labels"]["instance"]: r["value"] for r in engine.instant("mongodb_up", twin.now)} == {
        "mongodb-geo:27017": 0.0, "mongodb-order:27017": 0.0}
    # a request waits out the 30 s selection: slow, then failed
    assert any(s.l > 0 for s in twin.sli_samples(since=65.0))
    twin.chaos_stop(handle)
    twin.advance_to(150.0)
    assert engine.instant('mongodb_up{instance="mongodb-geo:27017"}', twin.now)[0]["value"] == 1.0


def test_an_unresolvable_host_in_the_go_drivers_words(twin: Twin) -> None:
    answer = _call(twin, "geo", {"uri": "mongodb://admin:admin@mongodb-gone:27017/?authSource=admin"})
    assert (answer["kind"], answer["code"]) == ("nxdomain", 0)
    assert answer["message"].endswith("Last error: connection() error occurred during connection handshake: "
                                      "dial tcp: lookup mongodb-gone on 10.96.0.10:53: no such host }, ] }")


def test_a_partition_times_out_and_a_callers_deadline_ends_selection_early() -> None:
    from pytest_marathon.twin.runtime import _Trace
    twin = _twin(12)
    twin.chaos_start("partition", "geo", peer="mongodb-geo")
    ip = twin.runtime.cluster_ip("mongodb-geo")
    answer = _call(twin, "geo", {"op": "count"})
    assert answer["kind"] == "timeout" and answer["message"].startswith("server selection error: server selection "
                                                                        "timeout, current topology")
    assert f"dial tcp {ip}:27017: i/o timeout }}, ] }}" in answer["message"]
    pod = next(p for p in twin.cluster.pods.values() if p.deployment == "geo")
    for deadline_set, ended in ((True, "context deadline exceeded"), (False, "context canceled")):
        _code, _msg, response, ms = twin.runtime.serve(pod, "Query", {"op": "count"}, _Trace("1" * 32, "r", twin.now),
                                                       "", 5_000.0, deadline_set=deadline_set)
        assert response["message"].startswith(f"server selection error: {ended}, current topology")
        assert 5_000.0 <= ms < 5_100.0


def test_data_and_users_survive_a_restart_only_with_a_volume() -> None:
    twin = _twin(13)
    assert _call(twin, "geo", {"op": "insert", "doc": {"_id": "kept"}}) == {"result": "kept"}
    twin.mongo_shell("mongodb-geo", [*ROOT, "--eval", "db.revokeRolesFromUser('admin', "
                                                      "[{role: 'readWrite', db: 'geo-db'}])"])
    orders_before = _call(twin, "orders", {"op": "count"})["result"]
    assert orders_before > 20
    twin.chaos_start("pod_kill", "mongodb-geo")
    twin.chaos_start("pod_kill", "mongodb-order")
    twin.advance_to(twin.now + 30.0)
    # mongodb-geo's volume keeps the document and the revoked role; mongodb-order starts empty
    assert _call(twin, "geo", {"op": "count"})["code"] == 13
    twin.mongo_shell("mongodb-geo", [*ROOT, "--eval", "db.grantRolesToUser('admin', ['readWrite'])"])
    assert _call(twin, "geo", {"op": "count"})["code"] == 13  # 'readWrite' alone means readWrite on admin
    twin.mongo_shell("mongodb-geo", [*ROOT, "--eval", "db.getSiblingDB('admin').grantRolesToUser('admin', "
                                                      "[{role: 'readWrite', db: 'geo-db'}])"])
    assert _call(twin, "geo", {"op": "find", "filter": {"_id": "kept"}}) == {"result": [{"_id": "kept"}]}
    assert _call(twin, "orders", {"op": "count"})["result"] < orders_before


# --- the shell ---------------------------------------------------------------------------------------------------
def test_shell_get_users_and_drop_user(twin: Twin) -> None:
    status, out, _ = twin.mongo_shell("mongodb-geo", [*ROOT, "--eval", "db.getSiblingDB('geo-db').getUsers()"])
    assert (status, out) == (0, "[ ]\n")
    status, out, _ = twin.mongo_shell("mongodb-geo", [*ROOT, "--eval", "db.getUsers()"])
    assert status == 0
    assert out.startswith('[\n\t{\n\t\t"_id" : "admin.admin",\n\t\t"userId" : UUID("')
    assert '\t\t"roles" : [\n\t\t\t{\n\t\t\t\t"role" : "userAdminAnyDatabase",\n\t\t\t\t"db" : "admin"\n\t\t\t},' in out
    assert '\t\t"mechanisms" : [\n\t\t\t"SCRAM-SHA-1",\n\t\t\t"SCRAM-SHA-256"\n\t\t]\n\t},\n\t{\n\t\t"_id" : "admin.root"' in out
    assert twin.mongo_shell("mongodb-geo", [*ROOT, "--eval", "db.dropUser('ghost')"]) == (0, "false\n", "")
    assert twin.mongo_shell("mongodb-geo", [*ROOT, "--eval", "printjson(db.getUser('ghost'))"]) == (0, "null\n", "")


def test_shell_errors() -> None:
    twin = _twin(15)
    status, out, _ = twin.mongo_shell("mongodb-geo", ["mongo", "admin", "-u", "admin", "-p", "bad",
                                                      "--authenticationDatabase", "admin", "--eval", "db.getUsers()"])
    assert status == 1
    assert out == ("MongoDB shell version v4.4.6\nconnecting to: mongodb://127.0.0.1:27017/admin?authSource=admin&"
                   "compressors=disabled&gssapiServiceName=mongodb\nError: Authentication failed. :\n"
                   "connect@src/mongo/shell/mongo.js:374:17\n@(connect):2:6\nexception: connect failed\n"
                   "exiting with code 1\n")
    status, out, _ = twin.mongo_shell("mongodb-geo", [
        *ROOT, "--eval", "db.createUser({user: 'root', pwd: 'x', roles: ['root']})"])
    assert status == 252
    assert out == ('uncaught exception: Error: couldn\'t add user: User "root@admin" already exists :\n'
                   "_getErrorWithCode@src/mongo/shell/utils.js:25:13\n"
                   "DB.prototype.createUser@src/mongo/shell/db.js:1386:11\n@(shell eval):1:1\nexiting with code -4\n")
    # a user without a user-admin role
    assert twin.mongo_shell("mongodb-geo", [*ROOT, "--eval", "db.createUser({user: 'reader', pwd: 'r', "
                                                             "roles: [{role: 'read', db: 'geo-db'}]})"])[0] == 0
    status, out, _ = twin.mongo_shell("mongodb-geo", [
        "mongo", "geo-db", "--quiet", "-u", "reader", "-p", "r", "--authenticationDatabase", "admin",
        "--eval", "db.getSiblingDB('admin').revokeRolesFromUser('root', ['root'])"])
    assert status == 252 and out.startswith(
        "uncaught exception: Error: not authorized on admin to execute command { revokeRolesFromUser: \"root\", "
        'roles: [ "root" ], writeConcern: { w: "majority", wtimeout: 600000.0 }, lsid: { id: UUID("')
    assert twin.mongo_shell("mongodb-geo", [*ROOT, "--eval", "db.grantRolesToUser('ghost', ['read'])"])[1] \
        .startswith('uncaught exception: Error: Could not find user "ghost" for db "admin" :\n')
    assert twin.mongo_shell("mongodb-geo", [*ROOT, "--eval", "db.grantRolesToUser('admin', ['nosuch'])"])[1] \
        .startswith("uncaught exception: Error: Could not find role: nosuch@admin :\n")
    # no credentials at all: the command requires authentication
    assert twin.mongo_shell("mongodb-geo", ["mongo", "--quiet", "--eval", "db.getUsers()"])[1].startswith(
        "uncaught exception: Error: command usersInfo requires authentication :\n")


@pytest.mark.parametrize("script", ["db.adminCommand({shutdown: 1})", "rs.status()", "db.geo.find()",
                                    "db.createUser(", "while(1){}"])
def test_the_shell_refuses_what_it_does_not_model(twin: Twin, script: str) -> None:
    status, out, err = twin.mongo_shell("mongodb-geo", [*ROOT, "--eval", script])
    assert (status, out) == (2, "") and err.startswith("twin: mongo: ")


def test_the_localhost_exception_creates_the_first_user() -> None:
    server = MongoServer(initial_data({}), auth=True)
    status, out, _ = server.shell(["mongo", "admin", "--quiet", "--eval",
                                   "db.createUser({user: 'a', pwd: 'b', roles: ['root']})"])
    assert (status, out) == (0, 'Successfully added user: {\n\t"user" : "a",\n\t"roles" : [\n\t\t"root"\n\t]\n}\n')
    # the exception closes once a user exists
    assert server.shell(["mongo", "admin", "--quiet", "--eval",
                         "db.createUser({user: 'c', pwd: 'd', roles: ['root']})"])[0] == 252


# --- metrics ----------------------------------------------------------------------------------------------------
def test_exporter_series_through_promql() -> None:
    twin = _twin(17, until=120.0)
    twin.chaos_start("mongo_revoke_roles", "mongodb-geo", user="admin")
    twin.advance_to(240.0)
    engine = PromQLEngine(twin.store)
    ops = {r["labels"]["legacy_op_type"]: r["value"]
           for r in engine.instant('mongodb_ss_opcounters{instance="mongodb-order:27017"}', 240.0)}
    assert ops["insert"] > 20 and ops["query"] == 0.0
    assert engine.instant('rate(mongodb_ss_opcounters{legacy_op_type="query", instance="mongodb-geo:27017"}[1m])',
                          240.0)[0]["value"] > 0
    conns = engine.instant('mongodb_ss_connections{conn_type="current"}', 240.0)
    assert {r["labels"]["instance"]: r["value"] for r in conns} == {"mongodb-geo:27017": 1.0,
                                                                   "mongodb-order:27017": 1.0}
    # every Unauthorized counts as a user assertion
    assert engine.instant('increase(mongodb_ss_asserts{assert_type="user", instance="mongodb-geo:27017"}[2m])',
                          240.0)[0]["value"] > 10


def test_the_same_seed_gives_the_same_telemetry() -> None:
    assert _twin(21, 90.0).telemetry_digest() == _twin(21, 90.0).telemetry_digest()


# --- the query language ------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(-20, 20), max_size=15), low=st.integers(-25, 25), high=st.integers(-25, 25),
       excluded=st.integers(-20, 20))
def test_range_and_set_operators_agree_with_python(values: list[int], low: int, high: int, excluded: int) -> None:
    server = MongoServer(initial_data({"data": {"d": {"c": [{"n": v, "i": i} for i, v in enumerate(values)]}}}),
                         auth=False)

    def found(query: dict) -> list[int]:
        return [d["i"] for d in server.run(None, "d", {"find": "c", "filter": query})["cursor"]["firstBatch"]]

    assert found({"n": {"$gte": low, "$lt": high}}) == [i for i, v in enumerate(values) if low <= v < high]
    assert found({"n": {"$gt": low, "$lte": high}}) == [i for i, v in enumerate(values) if low < v <= high]
    assert found({"n": {"$ne": excluded}}) == [i for i, v in enumerate(values) if v != excluded]
    assert found({"n": {"$in": [low, high]}}) == [i for i, v in enumerate(values) if v in (low, high)]
    assert found({"n": {"$nin": [low, high]}}) == [i for i, v in enumerate(values) if v not in (low, high)]
    by_n = server.run(None, "d", {"find": "c", "filter": {}, "sort": {"n": 1}, "limit": 3})["cursor"]["firstBatch"]
    assert [d["n"] for d in by_n] == sorted(values)[:3]


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(0, 4), max_size=15), wanted=st.integers(0, 4), limit=st.integers(-3, 3),
       multi=st.booleans())
def test_a_limit_takes_the_first_matches_in_natural_order(values: list[int], wanted: int, limit: int,
                                                          multi: bool) -> None:
    """find with a limit and no sort, a single update and a single delete take the first matches
    in insertion order, as a collection scan does (the scan may stop there)."""
    def server() -> MongoServer:
        return MongoServer(initial_data({"data": {"d": {"c": [{"n": v, "i": i} for i, v in enumerate(values)]}}}),
                           auth=False)

    hits = [i for i, v in enumerate(values) if v == wanted]
    for query in ({"n": wanted}, {"n": {"$eq": wanted}}):
        got = server().run(None, "d", {"find": "c", "filter": query, "limit": limit})["cursor"]["firstBatch"]
        assert [d["i"] for d in got] == (hits[:abs(limit)] if limit else hits)
        updated = server()
        updated.run(None, "d", {"update": "c", "updates": [{"q": query, "u": {"$set": {"hit": True}}, "multi": multi}]})
        marked = [d["i"] for d in updated.run(None, "d", {"find": "c", "filter": {"hit": True}})["cursor"]["firstBatch"]]
        assert marked == (hits if multi else hits[:1])
        deleted = server()
        deleted.run(None, "d", {"delete": "c", "deletes": [{"q": query, "limit": 0 if multi else 1}]})
        left = [d["i"] for d in deleted.run(None, "d", {"find": "c", "filter": {}})["cursor"]["firstBatch"]]
        assert left == [i for i in range(len(values)) if i not in (hits if multi else hits[:1])]


PLAIN_VALUES = st.one_of(st.sampled_from(["a", "b", "1"]), st.integers(0, 2))
FIELD_VALUES = st.one_of(PLAIN_VALUES, st.booleans(), st.sampled_from([1.0, 2.5]),
                         st.lists(st.sampled_from(["a", 1]), max_size=2))
# collections of strings and integers only (what an index serves), and mixed ones (scanned)
COLLECTIONS = st.one_of(*(st.lists(st.dictionaries(st.sampled_from(["x", "y"]), values), min_size=8, max_size=20)
                          for values in (PLAIN_VALUES, FIELD_VALUES)))
DOCS = st.lists(st.dictionaries(st.sampled_from(["x", "y"]), st.one_of(PLAIN_VALUES, FIELD_VALUES)), max_size=3)
WANTED = st.one_of(st.sampled_from(["a", "b", "1"]), st.integers(0, 2), st.booleans(), st.just(1.0))
# beside an equality: conditions checked on the index's candidates, and ones that send the
# filter to the scan (a range, an unknown operator, an `$in` without an array: these raise)
OTHER_CONDITIONS = st.one_of(
    WANTED, st.lists(st.sampled_from(["a", 1]), max_size=2),
    st.fixed_dictionaries({"$in": st.lists(WANTED, max_size=3)}), st.fixed_dictionaries({"$nin": st.lists(WANTED, max_size=3)}),
    st.fixed_dictionaries({"$ne": WANTED}), st.fixed_dictionaries({"$exists": st.booleans()}),
    st.fixed_dictionaries({"$gt": st.integers(0, 2)}), st.just({"$in": "a"}), st.just({"$regex": "a"}))
# mostly one field, so that reads through one index alternate with the writes that change it
FILTERS = st.one_of(st.fixed_dictionaries({"x": WANTED}), st.dictionaries(st.sampled_from(["x", "y"]), WANTED, min_size=1),
                    st.fixed_dictionaries({"x": WANTED, "y": OTHER_CONDITIONS}))


@settings(max_examples=200, deadline=None)
@given(docs=COLLECTIONS, steps=st.lists(st.tuples(st.sampled_from(["find", "count", "insert", "update", "delete"]),
                                           FILTERS, st.integers(0, 2), DOCS), min_size=3, max_size=10))
def test_reads_of_equalities_give_what_a_collection_scan_gives(docs: list[dict], steps: list) -> None:
    """find and count answer equality filters through an index (with other conditions checked on
    its candidates); interleaved with writes, every answer, or refusal, is the scan's (the same
    documents in the same order) under MongoDB's cross-type rules: an array matches by element,
    1 equals 1.0, a bool equals only a bool, "1" never equals 1."""
    from pytest_marathon.twin.mongostore import matching

    server = MongoServer(initial_data({"data": {"d": {"c": [dict(d, i=i) for i, d in enumerate(docs)]}}}), auth=False)
    for kind, query, limit, new in steps:
        stored = server.data.dbs["d"]["c"]
        if kind in ("find", "count"):
            try:
                want = matching(stored, query)
            except MongoError as refused:
                with pytest.raises(MongoError, match=re.escape(refused.message)):
                    server.run(None, "d", {"find": "c", "filter": query} if kind == "find" else {"count": "c", "query": query})
                continue
        if kind == "find":
            got = server.run(None, "d", {"find": "c", "filter": query, "limit": limit})["cursor"]["firstBatch"]
            assert got == (want[:limit] if limit else want)
        elif kind == "count":
            assert server.run(None, "d", {"count": "c", "query": query})["n"] == len(want)
        elif kind == "insert" and new:
            server.run(None, "d", {"insert": "c", "documents": new})
        elif kind == "update":
            with suppress(MongoError):  # a filter the scan refuses changes nothing
                server.run(None, "d", {"update": "c", "updates": [{"q": query, "u": {"$set": {"x": "a"}}, "multi": True}]})
        elif kind == "delete":
            with suppress(MongoError):
                server.run(None, "d", {"delete": "c", "deletes": [{"q": query, "limit": 1}]})


REFUSED_CONDITIONS = st.sampled_from([("y", {"$in": "a"}), ("y", {"$nin": 1}), ("y", {"$regex": "a"}),
                                       ("y", {"$size": 1, "$ne": "a"}), ("$nor", [{"y": "a"}])])


@settings(max_examples=60, deadline=None)
@given(docs=st.lists(st.fixed_dictionaries({"x": PLAIN_VALUES, "y": PLAIN_VALUES}), min_size=8, max_size=12),
       wanted=st.one_of(st.just("none has it"), PLAIN_VALUES), refused=REFUSED_CONDITIONS,
       kind=st.sampled_from(["find", "count"]))
def test_a_filter_the_scan_refuses_is_refused_whatever_an_index_would_find(
        docs: list[dict], wanted: object, refused: tuple[str, object], kind: str) -> None:
    """A condition the scan refuses, ahead of an equality an index could serve, is refused on the
    first document whatever the equality would find: no index may answer such a filter with no
    document checked (and so no refusal)."""
    from pytest_marathon.twin.mongostore import matching

    server = MongoServer(initial_data({"data": {"d": {"c": docs}}}), auth=False)
    query = {refused[0]: refused[1], "x": wanted}
    with pytest.raises(MongoError) as by_scan:
        matching(docs, query)
    command = {"find": "c", "filter": query} if kind == "find" else {"count": "c", "query": query}
    with pytest.raises(MongoError, match=re.escape(by_scan.value.message)):
        server.run(None, "d", command)


def test_an_unknown_operator_is_a_bad_value() -> None:
    server = MongoServer(initial_data({"data": {"d": {"c": [{"n": 1}]}}}), auth=False)
    with pytest.raises(MongoError, match=r"^unknown operator: \$regex$"):
        server.run(None, "d", {"find": "c", "filter": {"n": {"$regex": "x"}}})


@pytest.mark.skipif(__import__("shutil").which("kubectl") is None, reason="kubectl not installed (Debian 'kubernetes-client')")
def test_kubectl_exec_runs_the_mongo_shell_of_the_pod(tmp_path: Path) -> None:
    """AIOpsLab's revoke and its mitigation as an operator types them: `kubectl exec <mongodb pod>
    -- mongo admin -u ... --eval ...` through the twin's API server; the shell's exit status is
    kubectl's, a mongo pod has no other programs than env/printenv and its shell."""
    import subprocess
    import threading

    from pytest_marathon.apiserver import start_kube_api
    from pytest_marathon.apiserver.kubeconfig import write_kubeconfig

    twin = _twin(17)
    with start_kube_api(twin, lock=threading.RLock()) as server:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig.yaml", server.url, twin.namespace)
        pod = next(p.name for p in sorted(twin.cluster.pods.values(), key=lambda p: p.name)
                   if p.deployment == "mongodb-geo")

        def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "exec", pod, "--", *args],
                                  capture_output=True, text=True, timeout=60, check=False)

        admin = ["mongo", "admin", "-u", "admin", "-p", "admin", "--authenticationDatabase", "admin"]
        revoked = kubectl(*admin, "--eval", "db.revokeRolesFromUser('admin', [{role: 'readWrite', db: 'geo-db'}]);")
        assert revoked.returncode == 0, revoked.stderr
        assert _call(twin, "geo", {"op": "count"})["code"] == 13
        granted = kubectl(*admin, "--eval", "db.grantRolesToUser('admin', [{role: 'readWrite', db: 'geo-db'}]);")
        assert granted.returncode == 0 and granted.stdout.endswith("MongoDB server version: 4.4.6\n")
        assert "code" not in _call(twin, "geo", {"op": "count"})
        wrong = kubectl("mongo", "admin", "-u", "admin", "-p", "nope", "--eval", "db.getUsers()")
        assert wrong.returncode == 1 and "command terminated with exit code 1" in wrong.stderr
        missing = kubectl("bash", "-c", "echo hi")
        assert missing.returncode == 1 and 'exec: "bash": executable file not found' in missing.stderr
