"""The HotelReservation twin through the Twin API: the routes and call graph of DeathStarBench
hotelReservation (services/frontend/server.go; search/server.go Nearby -> geo, rate), memcached
read-through (services/rate/server.go GetRates), and its failures as the fork's Go code has them
(xlab-uiuc/aiopslab-applications hotelReservation: `log.Fatal` on a failed start-up count,
`log.Panic` on a memcached error)."""

from __future__ import annotations

import pytest

from pytest_marathon.alerting import PromQLEngine
from pytest_marathon.twin.engine import Twin

APP = "hotelreservation"
ROUTES = ("/hotels", "/recommendations", "/user", "/reservation")


def _value(twin: Twin, query: str) -> dict[str, float]:
    return {row["labels"].get("instance", row["labels"].get("pod", "")): float(row["value"])
            for row in PromQLEngine(twin.store).instant(query, twin.now)}


@pytest.fixture(scope="module")
def healthy() -> Twin:
    twin = Twin(APP, seed=11)
    twin.advance_to(120.0)
    return twin


def test_a_healthy_run_is_quiet_and_serves_every_route(healthy: Twin) -> None:
    noisy = [line for line in healthy.logs(since=0.0, limit=10_000) if line["level"] in ("error", "warning")]
    assert noisy == []
    assert all(healthy.probe({"kind": "request", "route": route, "max_seconds": 2.5}) for route in ROUTES)
    assert all(sample.e == 0.0 for sample in healthy.sli_samples(since=0.0))
    assert healthy.resources("pods") and all(
        s["ready"] for p in healthy.resources("pods") for s in p["status"]["containerStatuses"])
    assert healthy.workloads() == sorted(
        ["frontend", "search", "geo", "rate", "profile", "recommendation", "reservation", "user"]
        + [f"mongodb-{d}" for d in ("geo", "profile", "rate", "recommendation", "reservation", "user")]
        + ["memcached-profile", "memcached-rate", "memcached-reserve"])


def test_the_routes_follow_the_upstream_call_graph(healthy: Twin) -> None:
    graph: dict[str, set[str]] = {}
    for trace in healthy.traces(since=0.0, limit=2000):
        graph.setdefault(trace["route"], set()).update(trace["services"])
    assert graph == {
        "search": {"frontend", "search", "geo", "rate", "reservation", "profile"},
        "recommend": {"frontend", "recommendation", "profile"},
        "user": {"frontend", "user"},
        "reserve": {"frontend", "user", "reservation"},
    }
    # wrk2's mix: search 60 %, recommend 39 %, login and reserve 0.5 % each
    counts = {route: 0 for route in graph}
    for trace in healthy.traces(since=0.0, limit=100_000):
        counts[trace["route"]] += 1
    total = sum(counts.values())
    assert 0.5 < counts["search"] / total < 0.7
    assert 0.3 < counts["recommend"] / total < 0.48
    assert counts["user"] + counts["reserve"] < 0.05 * total


def test_rates_and_profiles_are_read_through_memcached(healthy: Twin) -> None:
    items = _value(healthy, "memcached_current_items")
    by_server = {instance.split(":")[0]: n for instance, n in items.items()}
    assert by_server["memcached-rate"] > 0
    assert by_server["memcached-profile"] > 0
    hits = _value(healthy, 'sum by (instance) (memcached_commands_total{command="get",status="hit"})')
    assert hits[next(i for i in hits if i.startswith("memcached-profile"))] > 0


def test_revoked_roles_crash_loop_geo_once_it_restarts_and_searches_fail() -> None:
    """revoke-admin-geo-mongo.sh then the injector's pod deletion (aiopslab inject_app.py)."""
    twin = Twin(APP, seed=5)
    twin.advance_to(0.0)
    twin.chaos_start("mongo_revoke_roles", "mongodb-geo", user="admin", db="admin",
                     roles=[{"role": "readWrite", "db": "geo-db"}])
    assert twin.probe({"kind": "request", "route": "/hotels", "max_seconds": 2.5})  # the index is in memory
    twin.chaos_start("pod_kill", "geo")
    twin.advance_to(120.0)
    lines = [line["message"] for line in twin.logs(service="geo", since=0.0, limit=1000)]
    assert ('(Unauthorized) not authorized on geo-db to execute command { count: "geo", query: { hotelId: "1" }'
            in lines[1])
    assert not twin.probe({"kind": "request", "route": "/hotels", "max_seconds": 2.5})
    assert twin.probe({"kind": "request", "route": "/recommendations", "max_seconds": 2.5})
    # search returns geo's dial error as is; the frontend answers 500 with grpc-go's status text
    failed = [t for t in twin.traces(since=60.0, limit=500) if t["error"] and t["route"] == "search"]
    top = twin.trace(failed[-1]["trace_id"])["spans"][0]
    assert top["name"] == "GET /hotels"
    assert top["status_message"].startswith('INTERNAL: rpc error: code = Unavailable desc = connection error: desc = '
                                            '"transport: Error while dialing: dial tcp ')
    assert top["status_message"].endswith(':8083: connect: connection refused"')
    geo = next(p for p in twin.resources("pods") if p["metadata"]["name"].startswith("geo-"))
    status = geo["status"]["containerStatuses"][0]
    assert status["restartCount"] >= 2 and not status["ready"]
    assert status["lastState"]["terminated"]["exitCode"] == 1  # log.Fatal: os.Exit(1)
    # the mitigation script's grant, then the restart
    code, _out, _err = twin.mongo_shell("mongodb-geo", [
        "mongo", "admin", "-u", "admin", "-p", "admin", "--authenticationDatabase", "admin", "--eval",
        "db.grantRolesToUser('admin', [{role: 'readWrite', db: 'geo-db'}]);"])
    assert code == 0
    twin.restart("geo")
    twin.advance_to(180.0)
    assert twin.probe({"kind": "request", "route": "/hotels", "max_seconds": 2.5})


def test_a_dropped_user_panics_the_service_at_its_dial() -> None:
    """remove-admin-mongo.sh: mgo.Dial's failure is log.Panic (exit 2, a Go panic)."""
    twin = Twin(APP, seed=5)
    twin.advance_to(0.0)
    twin.chaos_start("mongo_drop_user", "mongodb-rate", user="admin", db="admin")
    twin.chaos_start("pod_kill", "rate")
    twin.advance_to(60.0)
    lines = [line["message"] for line in twin.logs(service="rate", since=0.0, limit=1000)]
    assert any(line.startswith("panic: connection() error occurred during connection handshake: auth error: "
                               "sasl conversation error: unable to authenticate using mechanism") for line in lines)
    rate = next(p for p in twin.resources("pods") if p["metadata"]["name"].startswith("rate-"))
    assert rate["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 2
    assert not twin.probe({"kind": "request", "route": "/hotels", "max_seconds": 2.5})


def test_a_memcached_error_panics_rate() -> None:
    """GetRates: any GetMulti error but a miss is log.Panic, the gRPC server dies of it."""
    twin = Twin(APP, seed=6)
    twin.advance_to(30.0)
    twin.chaos_start("datastore_outage", "memcached-rate")
    twin.advance_to(60.0)
    lines = [line["message"] for line in twin.logs(service="rate", since=30.0, limit=1000)]
    assert any(line.startswith("Memmcached error while trying to get hotel [id: [") and
               line.endswith(":11211: connect: connection refused") for line in lines)
    assert any(line.startswith("panic: Memmcached error while trying to get hotel") for line in lines)
    assert not twin.probe({"kind": "request", "route": "/hotels", "max_seconds": 2.5})
    assert twin.probe({"kind": "request", "route": "/user", "max_seconds": 2.5})


def test_a_delay_on_user_slows_logins_not_searches() -> None:
    """inject_symp.py network_delay: 10 s on one user pod."""
    twin = Twin(APP, seed=7)
    twin.advance_to(0.0)
    twin.chaos_start("network_delay", "user", delay_ms=10_000.0)
    twin.advance_to(60.0)
    assert not twin.probe({"kind": "request", "route": "/user", "max_seconds": 2.5})
    assert twin.probe({"kind": "request", "route": "/hotels", "max_seconds": 2.5})


def test_the_same_seed_gives_the_same_run() -> None:
    first, second = Twin(APP, seed=9), Twin(APP, seed=9)
    first.advance_to(30.0)
    second.advance_to(30.0)
    assert first.telemetry_digest() == second.telemetry_digest()
