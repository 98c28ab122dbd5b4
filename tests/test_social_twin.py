"""The SocialNetwork twin through the Twin API: the wrk2 routes and the call graph of DeathStarBench
socialNetwork (src/ComposePostService/ComposePostHandler.h: compose -> unique-id, user, media, text
(-> url-shorten, user-mention), then post-storage, user-timeline, home-timeline (-> social-graph);
timeline reads -> redis, then post-storage), and its failures as the C++ services and the nginx Lua
scripts report them (ClientPool.h `Failed to connect <client>`, Thrift's TSocket `connect() failed:
Connection refused`, libmemcached's strerror, wrk2-api/*.lua's `compost_post failure: `)."""

from __future__ import annotations

import pytest

from pytest_marathon.alerting import PromQLEngine
from pytest_marathon.twin.engine import Twin

APP = "socialnetwork"
COMPOSE = {"kind": "request", "route": "/wrk2-api/post/compose", "max_seconds": 2.5}
HOME = {"kind": "request", "route": "/wrk2-api/home-timeline/read", "max_seconds": 2.5}
USER = {"kind": "request", "route": "/wrk2-api/user-timeline/read", "max_seconds": 2.5}
THRIFT = ["compose-post-service", "text-service", "url-shorten-service", "user-mention-service", "media-service",
          "unique-id-service", "user-service", "post-storage-service", "user-timeline-service",
          "home-timeline-service", "social-graph-service"]
STORES = (["post-storage-mongodb", "user-timeline-mongodb", "social-graph-mongodb", "user-mongodb",
           "url-shorten-mongodb", "media-mongodb", "post-storage-memcached", "user-memcached",
           "url-shorten-memcached", "media-memcached", "user-timeline-redis", "home-timeline-redis",
           "social-graph-redis"])


@pytest.fixture(scope="module")
def healthy() -> Twin:
    twin = Twin(APP, seed=11)
    twin.advance_to(120.0)
    return twin


def _messages(twin: Twin, since: float, service: str | None = None) -> list[str]:
    return [line["message"] for line in twin.logs(service=service, since=since, limit=10_000)]


def test_a_healthy_run_is_quiet_and_serves_every_route(healthy: Twin) -> None:
    noisy = [line for line in healthy.logs(since=0.0, limit=10_000) if line["level"] in ("error", "warning")]
    assert noisy == []
    assert all(healthy.probe(p) for p in (COMPOSE, HOME, USER))
    assert all(sample.e == 0.0 for sample in healthy.sli_samples(since=0.0))
    assert all(s["ready"] for p in healthy.resources("pods") for s in p["status"]["containerStatuses"])
    # the helm chart's 26 deployments (jaeger is infrastructure)
    assert healthy.workloads() == sorted(["nginx-thrift", "media-frontend", *THRIFT, *STORES])
    assert healthy.namespace == "test-social-network"


def test_the_routes_follow_the_upstream_call_graph(healthy: Twin) -> None:
    graph: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for trace in healthy.traces(since=0.0, limit=100_000):
        graph.setdefault(trace["route"], set()).update(trace["services"])
        counts[trace["route"]] = counts.get(trace["route"], 0) + 1
    assert graph == {
        "compose": {"nginx-thrift", "compose-post-service", "unique-id-service", "user-service", "media-service",
                    "text-service", "url-shorten-service", "user-mention-service", "post-storage-service",
                    "user-timeline-service", "home-timeline-service", "social-graph-service"},
        "read_home_timeline": {"nginx-thrift", "home-timeline-service", "post-storage-service"},
        "read_user_timeline": {"nginx-thrift", "user-timeline-service", "post-storage-service"},
    }
    # mixed-workload.lua: home 60 %, user 30 %, compose 10 %
    total = sum(counts.values())
    assert 0.5 < counts["read_home_timeline"] / total < 0.7
    assert 0.2 < counts["read_user_timeline"] / total < 0.4
    assert 0.05 < counts["compose"] / total < 0.15


def test_posts_are_read_through_post_storage_memcached(healthy: Twin) -> None:
    rows = PromQLEngine(healthy.store).instant("memcached_current_items", healthy.now)
    items = {row["labels"]["instance"].split(":")[0]: float(row["value"]) for row in rows}
    assert items["post-storage-memcached"] > 0


def test_user_service_scaled_to_zero_fails_every_compose_with_thrifts_connect_error() -> None:
    """scale_pod_social_net.py's fault: ComposePost's creator helper cannot connect."""
    twin = Twin(APP, seed=5)
    twin.advance_to(30.0)
    twin.scale("user-service", 0)
    twin.advance_to(90.0)
    compose_lines = _messages(twin, 30.0, "compose-post-service")
    assert compose_lines and set(compose_lines) == {"Failed to connect user-service-client"}
    nginx = set(_messages(twin, 30.0, "nginx-thrift"))
    assert nginx == {"compost_post failure: connect() failed: Connection refused"}
    assert not twin.probe(COMPOSE)
    assert twin.probe(HOME) and twin.probe(USER)
    failed = [t for t in twin.traces(since=30.0, limit=1000) if t["error"]]
    assert failed and {t["route"] for t in failed} == {"compose"}
    assert {t["http_status"] for t in failed} == {500}
    twin.scale("user-service", 1)
    twin.advance_to(120.0)
    assert twin.probe(COMPOSE)


def test_a_user_memcached_outage_fails_composes_with_libmemcacheds_text() -> None:
    """UserMentionHandler.h: a failed mget logs `Cannot get usernames of request <id>: <strerror>` and
    throws the strerror text; text-service logs both of its lines, compose-post its own, and
    wrk2-api/post/compose.lua answers 500 with it."""
    twin = Twin(APP, seed=6)
    twin.advance_to(30.0)
    twin.chaos_start("datastore_outage", "user-memcached")
    twin.advance_to(90.0)
    mention = _messages(twin, 30.0, "user-mention-service")
    assert mention and all(line.startswith("Cannot get usernames of request ") and line.endswith(": CONNECTION FAILURE")
                           for line in mention)
    assert set(_messages(twin, 30.0, "text-service")) == {
        "Failed to upload user_mentions to user-mention-service",
        "Failed to upload user mentions to user-mention-service"}
    assert set(_messages(twin, 30.0, "compose-post-service")) == {"Failed to send compose-text to text-service"}
    assert set(_messages(twin, 30.0, "nginx-thrift")) == {"compost_post failure: CONNECTION FAILURE"}
    # the services live on: Thrift's server answers the exception, nothing exits
    assert all(s["ready"] and s["restartCount"] == 0
               for p in twin.resources("pods") for s in p["status"]["containerStatuses"])


def test_a_post_storage_memcached_outage_fails_the_timeline_reads_that_have_posts() -> None:
    """PostStorageHandler.h ReadPosts: nothing to read returns before memcached; the mget error is
    `Cannot get post_ids of request <id>: <strerror>`; the timelines log `Failed to read posts from
    post-storage-service`; read.lua answers `Get home-timeline failure: <text>`."""
    twin = Twin(APP, seed=11)
    twin.advance_to(60.0)
    twin.chaos_start("datastore_outage", "post-storage-memcached")
    twin.advance_to(120.0)
    storage = _messages(twin, 60.0, "post-storage-service")
    assert storage and all(line.startswith("Cannot get post_ids of request ") for line in storage)
    assert set(_messages(twin, 60.0, "home-timeline-service")) == {"Failed to read posts from post-storage-service"}
    nginx = set(_messages(twin, 60.0, "nginx-thrift"))
    assert "Get home-timeline failure: CONNECTION FAILURE" in nginx
    reads = [t for t in twin.traces(since=60.0, limit=5000) if t["route"] == "read_home_timeline"]
    # an empty window never reaches memcached and still answers 200
    assert any(t["error"] for t in reads) and any(not t["error"] for t in reads)


def test_a_url_shorten_mongodb_outage_logs_mongo_c_drivers_text() -> None:
    """UrlShortenHandler.h: a failed insert logs `MongoDB error: <bson_error_t.message>`, here
    mongo-c-driver 1.15.0's pooled server selection giving up on a refused ismaster (not
    mongo-go-driver's words: the service is C++)."""
    twin = Twin(APP, seed=7)
    twin.advance_to(30.0)
    twin.chaos_start("datastore_outage", "url-shorten-mongodb")
    twin.advance_to(150.0)
    assert set(_messages(twin, 30.0, "url-shorten-service")) == {
        "MongoDB error: No suitable servers found: `serverSelectionTimeoutMS` expired: [connection refused calling "
        "ismaster on 'url-shorten-mongodb:27017']",
        "Failed to upload shortened urls from MongoDB"}


def test_the_seeded_social_graph_reaches_followers_home_timelines(healthy: Twin) -> None:
    """social-graph-mongodb holds socfb-Reed98's users 0..99 and their follows (init_social_graph.py):
    GetFollowers misses social-graph-redis once per author, reads MongoDB and fills redis;
    WriteHomeTimeline then fills the followers' home timelines."""
    engine = PromQLEngine(healthy.store)

    def by_instance(query: str) -> dict[str, float]:
        return {row["labels"]["instance"]: float(row["value"]) for row in engine.instant(query, healthy.now)}

    used = by_instance("redis_memory_used_bytes")
    assert used["redis://social-graph-redis:6379"] > 0
    assert used["redis://home-timeline-redis:6379"] > 0
    queries = by_instance('mongodb_ss_opcounters{legacy_op_type="query"}')
    assert next(v for k, v in queries.items() if k.startswith("social-graph-mongodb")) > 0


def test_the_same_seed_gives_the_same_run() -> None:
    first, second = Twin(APP, seed=9), Twin(APP, seed=9)
    first.advance_to(30.0)
    second.advance_to(30.0)
    assert first.telemetry_digest() == second.telemetry_digest()
