"""The Train Ticket twin through the Twin API: its 64 workloads as the quickstart manifests deploy
them (FudanSELab/train-ticket deployment/kubernetes-manifests/quickstart-k8s/), the REST call graph
of search and booking (TravelServiceImpl.query, PreserveServiceImpl.preserve), Spring Boot's
failure semantics (a Spring Data MongoDB timeout, RestTemplate's exceptions, Tomcat's log line and
the JSON error body) and the OpenResty entry's 502."""

from __future__ import annotations

import json

import pytest

from pytest_marathon.twin.engine import Twin
from pytest_marathon.twin.runtime import _Trace

APP = "trainticket"
JAVA = ("admin-basic-info", "admin-order", "admin-route", "admin-travel", "admin-user", "assurance", "auth", "basic",
        "cancel", "config", "consign-price", "consign", "contacts", "execute", "food-map", "food", "inside-payment",
        "notification", "order-other", "order", "payment", "preserve-other", "preserve", "price", "rebook",
        "route-plan", "route", "seat", "security", "station", "ticketinfo", "train", "travel-plan", "travel",
        "travel2", "user", "verification-code")
MONGOS = ("assurance", "auth", "config", "consign-price", "consign", "contacts", "food-map", "food", "inside-payment",
          "order-other", "order", "payment", "price", "route", "security", "station", "ticket-office", "train",
          "travel", "travel2", "user")
SEARCH = "/api/v1/travelservice/trips/left"
PRESERVE = "/api/v1/preserveservice/preserve"
TOMCAT = "Servlet.service() for servlet [dispatcherServlet] in context with path [] threw exception [Request " \
         "processing failed; nested exception is "


@pytest.fixture(scope="module")
def healthy() -> Twin:
    twin = Twin(APP, seed=11)
    twin.advance_to(120.0)
    return twin


def _serve(twin: Twin, deployment: str, route: str, request: dict) -> tuple[str, str, object]:
    """One request to a handler of `deployment` (as a caller pod's HTTP client would send it)."""
    pod = next(p for p in twin.cluster.pods.values() if p.deployment == deployment and p.ready)
    code, message, response, _ms = twin.runtime.serve(pod, route, request, _Trace("0" * 32, "r", twin.now), "",
                                                      60_000.0)
    return code, message, response


def _search_body() -> dict:
    return {"method": "POST", "path": SEARCH, "query": {}, "headers": {}, "params": {},
            "body": {"startingPlace": "Nan Jing", "endPlace": "Shang Hai", "departureTime": "2026-01-15"}}


def test_all_64_workloads_run_ready_and_a_healthy_run_is_quiet(healthy: Twin) -> None:
    assert healthy.workloads() == sorted(
        ["ts-ui-dashboard", "ts-voucher-mysql", "ts-voucher-service", "ts-avatar-service", "ts-news-service",
         "ts-ticket-office-service"] + [f"ts-{s}-service" for s in JAVA] + [f"ts-{m}-mongo" for m in MONGOS])
    pods = healthy.resources("pods")
    assert len(pods) == 64 and all(s["ready"] for p in pods for s in p["status"]["containerStatuses"])
    noisy = [line for line in healthy.logs(since=0.0, limit=100_000) if line["level"] in ("error", "warning")]
    assert noisy == []
    assert all(t["http_status"] == 200 for t in healthy.traces(since=0.0, limit=100_000))


def test_the_manifests_resources_and_probes(healthy: Twin) -> None:
    (travel,) = healthy.resources("deployments", "ts-travel-service")
    container = travel["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "codewisdom/ts-travel-service:0.0.4"
    assert container["resources"] == {"requests": {"cpu": "50m", "memory": "160Mi"},
                                      "limits": {"cpu": "200m", "memory": "500Mi"}}
    assert container["readinessProbe"]["tcpSocket"]["port"] == 12346
    assert container["readinessProbe"]["initialDelaySeconds"] == 160
    (mysql,) = healthy.resources("deployments", "ts-voucher-mysql")
    assert mysql["spec"]["template"]["spec"]["containers"][0]["image"] == "mysql:5.6.35"


def test_a_search_follows_travel_service_query(healthy: Twin) -> None:
    traces = [t for t in healthy.traces(since=0.0, limit=100_000) if t["route"] == f"POST {SEARCH}"]
    assert traces
    assert set().union(*(t["services"] for t in traces)) == {
        "ts-ui-dashboard", "ts-travel-service", "ts-ticketinfo-service", "ts-basic-service", "ts-station-service",
        "ts-route-service", "ts-train-service", "ts-price-service", "ts-order-service", "ts-seat-service",
        "ts-config-service"}
    code, _message, response = _serve(healthy, "ts-travel-service", "query_info", _search_body())
    assert code == "OK" and response["status"] == 200
    trips = response["body"]["data"]
    # routes through nanjing before shanghai: G1234, G1235, G1236 (ts-route-service InitData)
    assert sorted(t["tripId"] for t in trips) == ["G1234", "G1235", "G1236"]
    g1235 = next(t for t in trips if t["tripId"] == "G1235")
    # 250 km at GaoTieOne's rate 0.5 / 1.0 (ts-price-service InitData), 250 km/h from 12:00
    assert (g1235["priceForEconomyClass"], g1235["priceForConfortClass"]) == ("125.0", "250.0")
    assert (g1235["startingTime"], g1235["endTime"]) == ("12:00", "13:00")


def test_a_booking_follows_preserve_service_preserve(healthy: Twin) -> None:
    traces = [t for t in healthy.traces(since=0.0, limit=100_000) if t["route"] == f"POST {PRESERVE}"]
    assert traces
    assert set().union(*(t["services"] for t in traces)) == {
        "ts-ui-dashboard", "ts-preserve-service", "ts-security-service", "ts-order-service",
        "ts-order-other-service", "ts-contacts-service", "ts-travel-service", "ts-ticketinfo-service",
        "ts-basic-service", "ts-station-service", "ts-route-service", "ts-train-service", "ts-price-service",
        "ts-seat-service", "ts-config-service", "ts-assurance-service", "ts-food-service", "ts-user-service",
        "ts-notification-service"}
    trace = healthy.trace(traces[0]["trace_id"])
    calls = [s["peer"].split(":")[0] for s in trace["spans"]
             if s["service"] == "ts-preserve-service" and s["kind"] == "SPAN_KIND_CLIENT"]
    firsts = [c for i, c in enumerate(calls) if c not in calls[:i]]
    assert firsts[:5] == ["ts-security-service", "ts-contacts-service", "ts-travel-service",
                          "ts-ticketinfo-service", "ts-seat-service"]
    assert calls.index("ts-order-service") < calls.index("ts-user-service") < calls.index("ts-notification-service")


def test_the_mix_is_weighted_toward_search(healthy: Twin) -> None:
    counts: dict[str, int] = {}
    for trace in healthy.traces(since=0.0, limit=100_000):
        counts[trace["route"]] = counts.get(trace["route"], 0) + 1
    searches = sum(n for route, n in counts.items() if "trips/left" in route or "travelPlan" in route)
    rare = sum(counts.get(f"POST {r}", 0) for r in (PRESERVE, "/api/v1/inside_pay_service/inside_payment"))
    assert searches > 2 * rare > 0


def test_a_station_mongo_outage_times_out_in_spring_data_and_fails_every_search() -> None:
    twin = Twin(APP, seed=5)
    twin.advance_to(0.0)
    twin.chaos_start("datastore_outage", "ts-station-mongo")
    twin.advance_to(90.0)
    assert not twin.probe({"kind": "request", "task": "search"})
    timeout = ("Timed out after 30000 ms while waiting to connect. Client view of cluster state is {type=UNKNOWN, "
               "servers=[{address=ts-station-mongo:27017, type=UNKNOWN, state=CONNECTING, exception="
               "{com.mongodb.MongoSocketOpenException: Exception opening socket}, caused by "
               "{java.net.ConnectException: Connection refused (Connection refused)}}]")
    station = twin.logs(service="ts-station-service", since=0.0, level="error", limit=5)
    assert station and station[0]["message"] == (
        f"{TOMCAT}org.springframework.dao.DataAccessResourceFailureException: {timeout}; nested exception is "
        f"com.mongodb.MongoTimeoutException: {timeout}] with root cause\ncom.mongodb.MongoTimeoutException: {timeout}")
    basic = twin.logs(service="ts-basic-service", since=0.0, level="error", limit=5)
    assert basic[0]["message"] == (f"{TOMCAT}org.springframework.web.client.HttpServerErrorException: 500 null] "
                                   "with root cause\norg.springframework.web.client.HttpServerErrorException: 500 null")
    searches = [t for t in twin.traces(since=30.0, limit=10_000) if t["route"] == f"POST {SEARCH}"]
    assert searches and all(t["http_status"] == 500 and t["duration_ms"] >= 30_000 for t in searches)
    code, message, _ = _serve(twin, "ts-travel-service", "query_info", _search_body())
    body = json.loads(message)
    assert code == "INTERNAL" and {k: body[k] for k in ("status", "error", "exception", "message", "path")} == {
        "status": 500, "error": "Internal Server Error",
        "exception": "org.springframework.web.client.HttpServerErrorException", "message": "500 null", "path": SEARCH}


def test_a_service_without_pods_is_a_resource_access_exception_and_the_entry_a_502() -> None:
    twin = Twin(APP, seed=7)
    twin.advance_to(0.0)
    assert twin.scale("ts-route-service", 0).ok
    twin.advance_to(60.0)
    travel = twin.logs(service="ts-travel-service", since=0.0, level="error", limit=5)
    assert travel and travel[0]["message"].startswith(
        f'{TOMCAT}org.springframework.web.client.ResourceAccessException: I/O error on GET request for '
        '"http://ts-route-service:11178/api/v1/routeservice/routes/')
    assert travel[0]["message"].endswith(
        ': Connection refused (Connection refused); nested exception is java.net.ConnectException: Connection '
        'refused (Connection refused)] with root cause\njava.net.ConnectException: Connection refused (Connection '
        'refused)')
    assert twin.scale("ts-travel-service", 0).ok
    twin.advance_to(120.0)
    entry = twin.logs(service="ts-ui-dashboard", since=90.0, level="error", contains=SEARCH, limit=5)
    assert entry and entry[0]["message"].startswith(
        "connect() failed (111: Connection refused) while connecting to upstream, client: 10.244.0.1, server: "
        f'localhost, request: "POST {SEARCH} HTTP/1.1", upstream: "http://ts-travel-service:12346{SEARCH}"')
    assert {t["http_status"] for t in twin.traces(since=90.0, limit=10_000) if t["route"] == f"POST {SEARCH}"} == {502}


def test_same_seed_same_run() -> None:
    digests = []
    for _ in range(2):
        twin = Twin(APP, seed=3)
        twin.advance_to(30.0)
        digests.append(twin.telemetry_digest())
    assert digests[0] == digests[1]
