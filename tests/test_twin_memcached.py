"""memcached in the twin: the server model (memcached/memcached 1.6), the clients service code
gets from `ctx.memcached` (bradfitz/gomemcache for Go, libmemcached for C++), outages and
memory pressure, and memcached_exporter's series; seen through the Twin's public API on the
hotelReservation-shaped app in tests/fixtures/apps/cacheshop."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_marathon.alerting import PromQLEngine
from pytest_marathon.twin.engine import Twin
from pytest_marathon.twin.memcache import (
    MemcachedServer,
    MemcachedUsageError,
    Settings,
    gomemcache_pick,
    item_size,
    libmemcached_pick,
    one_at_a_time,
    parse_settings,
)

APPS = Path(__file__).parent / "fixtures" / "apps"
HOTELS = [f"h{i:02d}" for i in range(60)]
MIB = 1024 * 1024
ON_FIRST = [h for h in HOTELS if gomemcache_pick(h, 2) == 0]  # memcached-profile-1's share


def _twin(seed: int = 3, until: float = 120.0, apps_dir: Path = APPS) -> Twin:
    twin = Twin("cacheshop", seed=seed, apps_dir=apps_dir)
    twin.advance_to(until)
    return twin


def _value(twin: Twin, query: str) -> float | None:
    found = PromQLEngine(twin.store).instant(query, twin.now)
    return found[0]["value"] if found else None


def _profile(hotel: str, size: int = 100_000) -> str:
    """What the profile service caches for `hotel` (profiledb's answer, json.dumps'd)."""
    return json.dumps({"id": hotel, "name": "Hotel " + hotel, "description": "d" * size})


@pytest.fixture(scope="module")
def healthy() -> Twin:
    return _twin()


# --- the server ------------------------------------------------------------------------------------
def test_memory_and_item_limits_come_from_the_args_as_memcached_parses_them() -> None:
    assert parse_settings([]) == Settings(64 * MIB, MIB)
    assert parse_settings(["-m", "2"]).maxbytes == 2 * MIB
    assert parse_settings(["-m128"]).maxbytes == 128 * MIB
    assert parse_settings(["--memory-limit=8", "-m", "16"]).maxbytes == 16 * MIB  # the last one wins
    assert parse_settings(["-m", "8", "-I", "2m"]).item_size_max == 2 * MIB
    assert parse_settings(["-I", "4k"]).item_size_max == 4096
    assert parse_settings(["--max-item-size=2048"]).item_size_max == 2048
    with pytest.raises(MemcachedUsageError, match=r"^Cannot set item size limit higher than 1/2 of memory max\.$"):
        parse_settings(["-m", "1"])
    with pytest.raises(MemcachedUsageError, match=r"^Item max size cannot be less than 1024 bytes\.$"):
        parse_settings(["-I", "1023"])
    assert parse_settings(["-m", "2", "-I", "1024"]).item_size_max == 1024


def test_an_items_size_is_item_ntotal() -> None:
    # 48-byte header, key + NUL, value + CRLF, 8-byte CAS; 4 bytes more for non-zero flags
    assert item_size("k", "v") == 48 + 2 + 3 + 8
    assert item_size("key", "value", flags=1) == 48 + 4 + 4 + 7 + 8


def test_an_item_over_the_size_limit_is_refused_and_a_refused_set_drops_the_old_item() -> None:
    server = MemcachedServer(Settings(64 * MIB, 1024))
    assert server.store("set", "k", "old", 0, 0.0) == "STORED"
    big = "x" * (1024 - item_size("k", "") + 1)
    assert server.store("add", "k", big, 0, 0.0) == "SERVER_ERROR object too large for cache"
    assert server.get(["k"], 0.0) == {"k": "old"}  # only SET unlinks
    assert server.store("set", "k", big, 0, 0.0) == "SERVER_ERROR object too large for cache"
    assert server.get(["k"], 0.0) == {}
    assert server.stats["store_too_large"] == 2 and server.stats["cmd_set"] == 1
    assert server.store("set", "k", big[:-1], 0, 0.0) == "STORED"  # exactly the limit fits


def test_add_refuses_a_live_key_and_counts_as_a_set() -> None:
    server = MemcachedServer()
    assert server.store("add", "k", "1", 0, 0.0) == "STORED"
    assert server.store("add", "k", "2", 0, 0.0) == "NOT_STORED"
    assert server.get(["k"], 0.0) == {"k": "1"} and server.stats["cmd_set"] == 2


def test_expiry_in_virtual_time() -> None:
    server = MemcachedServer()
    server.store("set", "a", "1", 10, 100.0)
    assert server.get(["a"], 109.9) == {"a": "1"}
    assert server.get(["a"], 110.0) == {}
    assert server.stats["get_expired"] == 1 and server.stats["get_misses"] == 1 and server.curr_items == 0
    server.store("set", "b", "1", -1, 100.0)  # a negative exptime is expired at once
    assert server.get(["b"], 100.0) == {}
    server.store("set", "c", "1", 60 * 60 * 24 * 30 + 1, 100.0)  # over 30 days: an absolute time
    assert server.get(["c"], 2_592_000.0) == {"c": "1"} and server.get(["c"], 2_592_001.0) == {}
    server.store("set", "d", "1", 60 * 60 * 24 * 30, 100.0)  # exactly 30 days is still relative
    assert server.get(["d"], 2_592_099.0) == {"d": "1"}


def test_incr_and_decr() -> None:
    server = MemcachedServer()
    assert server.arithmetic(True, "n", 1, 0.0) == "NOT_FOUND" and server.stats["incr_misses"] == 1
    server.store("set", "n", str(2**64 - 1), 0, 0.0)
    assert server.arithmetic(True, "n", 2, 0.0) == "1"  # wraps at 2^64
    assert server.arithmetic(False, "n", 5, 0.0) == "0"  # stops at 0
    assert server.stats["incr_hits"] == 1 and server.stats["decr_hits"] == 1
    server.store("set", "s", "abc", 0, 0.0)
    assert server.arithmetic(True, "s", 1, 0.0) == "CLIENT_ERROR cannot increment or decrement non-numeric value"
    before = server.bytes
    server.store("set", "m", "9", 0, 0.0)
    server.arithmetic(True, "m", 1, 0.0)
    assert server.bytes == before + item_size("m", "10")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["set", "get", "delete"]), st.integers(0, 11), st.integers(0, 400)),
                max_size=120))
def test_eviction_is_least_recently_used_and_bytes_stay_under_the_limit(ops) -> None:
    """A reference LRU: sets and hits move a key to the head; room is made from the tail."""
    limit = 2048
    server = MemcachedServer(Settings(limit, 1024))
    order: list[str] = []
    sizes: dict[str, int] = {}
    evictions = 0
    for op, k, n in ops:
        key, value = f"k{k}", "v" * n
        if op == "set":
            size = item_size(key, value)
            while sum(sizes.values()) + size > limit:
                victim = order.pop(0)
                del sizes[victim]
                evictions += 1
            if key in sizes:
                order.remove(key)
            order.append(key)
            sizes[key] = size
            assert server.store("set", key, value, 0, 0.0) == "STORED"
        elif op == "get":
            hit = key in sizes
            assert (key in server.get([key], 0.0)) == hit
            if hit:
                order.remove(key)
                order.append(key)
        else:
            assert server.delete(key, 0.0) == ("DELETED" if key in sizes else "NOT_FOUND")
            if key in sizes:
                order.remove(key)
                del sizes[key]
        assert list(server.items) == order
        assert server.bytes == sum(sizes.values()) <= limit
        assert server.stats["evictions"] == evictions


def test_items_that_fill_the_limit_exactly_evict_nothing() -> None:
    size = item_size("k0", "v" * 100)
    server = MemcachedServer(Settings(size * 3, 1024))
    for i in range(3):
        server.store("set", f"k{i}", "v" * 100, 0, 0.0)
    assert server.curr_items == 3 and server.bytes == size * 3 and server.stats["evictions"] == 0
    server.store("set", "k3", "v" * 100, 0, 0.0)
    assert list(server.items) == ["k1", "k2", "k3"] and server.stats["evictions"] == 1


def test_expired_items_at_the_tail_are_reclaimed_not_evicted() -> None:
    server = MemcachedServer(Settings(2048, 1024))
    server.store("set", "old", "x" * 900, 5, 0.0)
    server.store("set", "live", "x" * 900, 0, 0.0)
    server.store("set", "new", "x" * 900, 0, 10.0)
    assert server.stats["reclaimed"] == 1 and server.stats["evictions"] == 0
    server.store("set", "newer", "x" * 900, 0, 10.0)
    assert server.stats["evictions"] == 1 and list(server.items) == ["new", "newer"]


def test_keys_spread_as_each_client_library_hashes_them() -> None:
    # crc32 IEEE ("hello" -> 0x3610a686, Go's crc32.ChecksumIEEE) modulo the number of servers
    assert gomemcache_pick("hello", 7) == 0x3610A686 % 7
    assert gomemcache_pick("anything", 1) == 0
    # Bob Jenkins' one-at-a-time, libhashkit's default
    assert one_at_a_time("a") == 0xCA2E9442
    assert one_at_a_time("The quick brown fox jumps over the lazy dog") == 0x519E91F5
    assert libmemcached_pick("a", 3) == 0xCA2E9442 % 3
    assert 0 < len(ON_FIRST) < len(HOTELS)


# --- through the twin --------------------------------------------------------------------------------
def test_hits_misses_and_bytes_through_promql(healthy: Twin) -> None:
    second = 'instance="memcached-profile-2:11211"'
    hits = _value(healthy, f'memcached_commands_total{{command="get", status="hit", {second}}}')
    misses = _value(healthy, f'memcached_commands_total{{command="get", status="miss", {second}}}')
    on_second = [h for h in HOTELS if h not in ON_FIRST]
    # each key misses once (the first read), then the write-back makes every later read a hit
    assert misses == len(on_second) + len(HOTELS) + 1  # + admin:user_id
    assert hits > 10 * misses
    assert _value(healthy, f'memcached_commands_total{{command="set", status="hit", {second}}}') == misses
    assert _value(healthy, f"memcached_current_items{{{second}}}") == len(on_second) + len(HOTELS) + 1
    expected = sum(item_size(h, _profile(h)) for h in on_second) + sum(
        item_size(f"{h}:user_id", str(1003)) for h in HOTELS) + item_size("admin:user_id", "1005")
    assert _value(healthy, f"memcached_current_bytes{{{second}}}") == expected
    assert _value(healthy, f"memcached_limit_bytes{{{second}}}") == 64 * MIB
    assert _value(healthy, f"memcached_items_evicted_total{{{second}}}") == 0
    assert _value(healthy, f"memcached_current_connections{{{second}}}") == 2  # profile and usermention
    assert _value(healthy, f'sum(rate(memcached_commands_total{{command="get", {second}}}[1m]))') > 0
    up = PromQLEngine(healthy.store).instant("memcached_up", healthy.now)
    assert {(r["labels"]["instance"], r["labels"]["job"], r["labels"]["namespace"], r["value"]) for r in up} == {
        ("memcached-profile-1:11211", "memcached_exporter", "cacheshop", 1.0),
        ("memcached-profile-2:11211", "memcached_exporter", "cacheshop", 1.0)}


def test_a_small_memory_limit_evicts_and_the_pod_memory_shows_the_cache(healthy: Twin) -> None:
    first = 'instance="memcached-profile-1:11211"'
    assert _value(healthy, f"memcached_limit_bytes{{{first}}}") == 2 * MIB
    evicted = _value(healthy, f"memcached_items_evicted_total{{{first}}}")
    assert evicted > 50
    items = _value(healthy, f"memcached_current_items{{{first}}}")
    assert items == 2 * MIB // item_size("h00", _profile("h00"))  # as many as fit, no more
    assert _value(healthy, f"memcached_current_bytes{{{first}}}") <= 2 * MIB
    assert _value(healthy, f"rate(memcached_items_evicted_total{{{first}}}[2m])") > 0
    misses = _value(healthy, f'memcached_commands_total{{command="get", status="miss", {first}}}')
    assert misses == evicted + items  # every eviction costs a later miss
    # the container holds its 2 Mi base and the slab memory the cache took (never given back)
    working = _value(healthy, 'max(container_memory_working_set_bytes{pod=~"memcached-profile-1-.*"})')
    assert 2 * MIB + _value(healthy, f"memcached_current_bytes{{{first}}}") <= working <= 4 * MIB


def test_a_down_memcached_panics_the_profile_service_for_its_share_of_keys() -> None:
    """hotelReservation's GetProfiles `log.Panic`s on any GetMulti error but a miss; the gRPC
    server dies of it (exit 2) and restarts; keys on the other server are unaffected."""
    twin = _twin(until=60.0)
    ip = twin.runtime.cluster_ip("memcached-profile-1")
    twin.chaos_start("datastore_outage", "memcached-profile-1")
    twin.advance_to(90.0)
    assert _value(twin, 'memcached_up{instance="memcached-profile-1:11211"}') == 0.0
    assert _value(twin, 'memcached_current_items{instance="memcached-profile-1:11211"}') is None
    lines = [line["message"] for line in twin.logs(service="profile", since=60.0, level="error", limit=200)]
    pattern = (r"Tried to get hotelIds \[(h\d\d)\], but got memmcached error = "
               rf"dial tcp {re.escape(ip)}:11211: connect: connection refused")
    panics = [re.match(pattern, line) for line in lines if "memmcached" in line and not line.startswith("panic")]
    assert panics and all(panics)
    assert {m.group(1) for m in panics} <= set(ON_FIRST)
    assert any(line.startswith("panic: Tried to get hotelIds [") and "goroutine" in line for line in lines)
    restarts = _value(twin, 'kube_pod_container_status_restarts_total{pod=~"profile-.*"}')
    assert restarts >= 1
    # usermention reads only memcached-profile-2: no error there
    assert not twin.logs(service="usermention", since=60.0, level="error")


def test_after_an_outage_the_cache_comes_back_empty() -> None:
    twin = _twin(until=60.0)
    second = 'instance="memcached-profile-2:11211"'
    before = _value(twin, f'memcached_commands_total{{command="get", status="hit", {second}}}')
    assert _value(twin, f"memcached_current_items{{{second}}}") > 60
    handle = twin.chaos_start("datastore_outage", "memcached-profile-2")
    twin.advance_to(75.0)
    twin.chaos_stop(handle)
    twin.advance_to(76.0)
    server = next(s for name, s in twin.memcached.items() if name.startswith("memcached-profile-2-"))
    assert server.stats["get_hits"] < before and server.stats["evictions"] == 0
    assert server.stats["total_items"] == server.stats["cmd_set"] <= server.stats["get_misses"]


def test_the_cpp_caller_reports_libmemcacheds_texts() -> None:
    twin = _twin(until=60.0)
    twin.chaos_start("datastore_outage", "memcached-profile-2")
    twin.advance_to(70.0)
    lines = [line["message"] for line in twin.logs(service="usermention", since=60.0, level="error")]
    assert lines and all(re.fullmatch(r"Cannot get usernames of request \S+: CONNECTION FAILURE", x) for x in lines)


def test_libmemcached_mget_succeeds_while_any_server_answers() -> None:
    """memcached_mget fails only when no server connected; a dead server's keys are just absent
    (get.cc), so the C++ caller reads them from the store instead of failing. `admin:user_id`,
    in every request, is on the second server (one-at-a-time), which stays up."""
    assert libmemcached_pick("admin:user_id", 2) == 1
    twin = _twin(until=30.0)
    assert twin.update_config("usermention", env={
        "MEMC_ADDRESS": "memcached-profile-1:11211,memcached-profile-2:11211"}).ok
    twin.advance_to(60.0)
    twin.chaos_start("datastore_outage", "memcached-profile-1")
    twin.advance_to(70.0)
    assert not twin.logs(service="usermention", since=60.0, level="error")
    assert twin.logs(service="profile", since=60.0, level="error", contains="connection refused")


def test_the_exporter_reports_cmd_set_and_refused_stores(healthy: Twin) -> None:
    """set hit is cmd_set (every storage command that got memory, a refused add included);
    store_too_large is memcached_item_too_large_total."""
    twin = _twin(until=30.0)
    name, server = next((n, s) for n, s in sorted(twin.memcached.items()) if n.startswith("memcached-profile-2-"))
    server.store("add", "h00:user_id", "1", 0, twin.now)  # already there: NOT_STORED
    server.store("set", "huge", "x" * MIB, 0, twin.now)
    twin.advance_to(45.0)
    second = 'instance="memcached-profile-2:11211"'
    assert _value(twin, f'memcached_commands_total{{command="set", status="hit", {second}}}') == server.stats["cmd_set"]
    assert server.stats["cmd_set"] == server.stats["total_items"] + 1
    assert _value(twin, f"memcached_item_too_large_total{{{second}}}") == 1
    assert _value(twin, f"memcached_items_reclaimed_total{{{second}}}") == 0


def test_gomemcache_refuses_a_malformed_key_before_any_io() -> None:
    """legalKey: a space in the key is ErrMalformedKey, which the profile service panics on."""
    healthy = _twin(until=30.0)  # probes write to the caches: a twin of its own
    text = "malformed: key is too long or contains invalid characters"
    assert healthy.probe({"kind": "request", "route": "/hotels", "product_id": "h01", "signature": text})
    assert not healthy.probe({"kind": "request", "route": "/hotels", "product_id": "h 1", "signature": text})
    assert not healthy.probe({"kind": "request", "route": "/hotels", "product_id": "h" * 251, "signature": text})
    assert healthy.probe({"kind": "request", "route": "/hotels", "product_id": "h" * 250, "signature": text})


def test_a_partition_times_out_after_the_clients_own_timeout() -> None:
    twin = _twin(until=60.0)
    ip = twin.runtime.cluster_ip("memcached-profile-1")
    handle = twin.chaos_start("partition", "profile", peer="memcached-profile-1")
    twin.advance_to(70.0)
    profile = [line["message"] for line in twin.logs(service="profile", since=60.0, level="error", limit=50)]
    assert any(line.endswith(f"but got memmcached error = memcache: connect timeout to {ip}:11211")
               for line in profile)
    slow = twin.traces(service="frontend", since=60.0, min_duration_ms=2000.0, limit=5)
    assert slow  # MEMC_TIMEOUT=2: gomemcache waits its Timeout, the request carries no deadline
    twin.chaos_stop(handle)
    twin.advance_to(100.0)
    twin.chaos_start("partition", "usermention", peer="memcached-profile-2")
    twin.advance_to(110.0)
    mention = [line["message"] for line in twin.logs(service="usermention", since=100.0, level="error")]
    assert mention and all(line.endswith(": A TIMEOUT OCCURRED") for line in mention)
    # libmemcached's connect timeout (4 s) bounds these requests
    assert twin.traces(service="frontend", since=100.0, min_duration_ms=4000.0, limit=5)


def test_a_server_name_that_does_not_resolve() -> None:
    """tune.NewMemCClient2 panics on SetServers' error at start; memcache.New ignores it and every
    call then fails with ErrNoServers."""
    twin = _twin(until=30.0)
    bad = "memcached-profile-1:11211,memcached-profil-2:11211"
    assert twin.update_config("profile", env={"MEMC_ADDRESS": bad}).ok
    twin.advance_to(60.0)
    lines = [line["message"] for line in twin.logs(service="profile", since=30.0, level="error", limit=50)]
    assert any(line.startswith("panic: lookup memcached-profil-2 on 10.96.0.10:53: no such host") for line in lines)
    assert twin.update_config("profile", env={"MEMC_CLIENT": "new"}).ok
    twin.advance_to(120.0)
    lines = [line["message"] for line in twin.logs(service="profile", since=60.0, level="error", limit=50)]
    assert any(line.endswith("but got memmcached error = memcache: no servers configured or available")
               for line in lines)


def test_memcached_refuses_an_item_limit_over_half_its_memory(tmp_path: Path) -> None:
    shutil.copytree(APPS / "cacheshop", tmp_path / "cacheshop")
    spec_path = tmp_path / "cacheshop" / "app.yaml"
    spec = yaml.safe_load(spec_path.read_text())
    spec["deployments"]["memcached-profile-1"]["args"] = ["-m", "1"]
    spec_path.write_text(yaml.safe_dump(spec))
    twin = _twin(until=30.0, apps_dir=tmp_path)
    pod = next(p for p in twin.cluster.pods.values() if p.deployment == "memcached-profile-1")
    assert pod.last_termination["exitCode"] == 64
    assert twin.logs(service="memcached-profile-1", contains="Cannot set item size limit higher than 1/2 of memory max.")
    assert _value(twin, 'memcached_up{instance="memcached-profile-1:11211"}') == 0.0


def test_same_seed_same_cache() -> None:
    a, b = _twin(seed=8, until=60.0), _twin(seed=8, until=60.0)
    assert a.telemetry_digest() == b.telemetry_digest()
    assert [list(s.items) for _, s in sorted(a.memcached.items())] == [list(s.items) for _, s in sorted(b.memcached.items())]


def test_cacheshop_emits_only_inventoried_series(healthy: Twin) -> None:
    from pytest_marathon.deploy.series import labels_of

    names = set(healthy.store.names())
    assert {"memcached_up", "memcached_commands_total", "memcached_items_evicted_total"} <= names
    for name in names:
        known = labels_of(name)
        assert known is not None, f"{name} is in no exporter's inventory"
        for series in healthy.store.series(name):
            assert set(series.labels) - {"__name__"} <= known, (name, series.labels)
