"""MongoDB failures as a C++ caller reads them: mongo-c-driver 1.15.0 (DeathStarBench socialNetwork's
`LIB_MONGOC_VERSION`), whose handlers log `bson_error_t.message`. Seen through the Twin's public API
on the small app in tests/fixtures/apps/cmongoshop (a C++ urls service on mongodb-urls); the Go and
Java texts of the same failures stay pinned in tests/test_twin_mongo.py and tests/test_k8s_objects.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.twin.engine import Twin

APPS = Path(__file__).parent / "fixtures" / "apps"
URI = "mongodb://admin:admin@mongodb-urls:27017/?authSource=admin"
TIMEOUT = "No suitable servers found: `serverSelectionTimeoutMS` expired: "


def _twin(seed: int = 3, until: float = 60.0) -> Twin:
    twin = Twin("cmongoshop", seed=seed, apps_dir=APPS)
    twin.advance_to(until)
    return twin


def _call(twin: Twin, request: dict[str, Any], deadline_ms: float = 60_000.0,
          deadline_set: bool = True) -> tuple[dict[str, Any], float]:
    """One call to urls' Query handler through the runtime (as a caller pod would), and its time."""
    from pytest_marathon.twin.runtime import _Trace
    pod = next(p for p in sorted(twin.cluster.pods.values(), key=lambda p: p.name)
               if p.deployment == "urls" and p.running and not p.terminating)
    code, message, response, ms = twin.runtime.serve(pod, "Query", request, _Trace("0" * 32, "r", twin.now), "",
                                                     deadline_ms, deadline_set=deadline_set)
    assert code == "OK", message
    return response, ms


@pytest.fixture(scope="module")
def twin() -> Twin:
    return _twin()


def test_a_healthy_run_reads_and_writes(twin: Twin) -> None:
    assert _call(twin, {"op": "count"})[0]["result"] >= 1
    assert twin.logs(service="urls", level="error", limit=1) == []


def test_a_server_error_is_its_errmsg_as_sent(twin: Twin) -> None:
    text = 'E11000 duplicate key error collection: url-shorten.url-shorten index: _id_ dup key: { _id: "seed" }'
    assert _call(twin, {"op": "insert", "doc": {"_id": "seed"}})[0] == {
        "code": 11000, "kind": "server", "code_name": "DuplicateKey", "message": text}
    unauthorized = _call(twin, {"op": "count", "uri": "mongodb://mongodb-urls:27017"})[0]
    assert unauthorized == {"code": 13, "kind": "server", "code_name": "Unauthorized",
                            "message": "command count requires authentication"}


@pytest.mark.parametrize("uri", [
    "mongodb://admin:wrong@mongodb-urls:27017/?authSource=admin",
    "mongodb://nobody:x@mongodb-urls:27017/?authSource=admin",
])
def test_a_failed_authentication_keeps_the_servers_text(twin: Twin, uri: str) -> None:
    assert _call(twin, {"uri": uri})[0] == {"code": 18, "kind": "auth", "code_name": "AuthenticationFailed",
                                            "message": "Authentication failed."}


def test_an_unresolvable_host_fails_selection_with_the_resolvers_text(twin: Twin) -> None:
    answer, ms = _call(twin, {"uri": "mongodb://admin:admin@mongodb-gone:27017/?authSource=admin"})
    assert answer == {"code": 0, "kind": "nxdomain", "code_name": "",
                      "message": TIMEOUT + "[Failed to resolve 'mongodb-gone']"}
    assert 30_000.0 <= ms < 30_100.0


def test_an_outage_logs_the_refused_ismaster_and_fails_requests() -> None:
    twin = _twin(5)
    twin.chaos_start("datastore_outage", "mongodb-urls")
    answer, _ms = _call(twin, {"op": "count"})
    assert answer == {"code": 0, "kind": "refused", "code_name": "",
                      "message": TIMEOUT + "[connection refused calling ismaster on 'mongodb-urls:27017']"}
    twin.advance_to(150.0)
    assert twin.logs(service="urls", level="error", limit=1, contains=(
        "MongoDB error: " + TIMEOUT + "[connection refused calling ismaster on 'mongodb-urls:27017']"))
    assert max(s.e for s in twin.sli_samples(since=100.0)) > 0.2


def test_a_partition_is_a_connect_timeout_and_no_context_ends_it_early() -> None:
    twin = _twin(6)
    twin.chaos_start("partition", "urls", peer="mongodb-urls")
    answer, _ms = _call(twin, {"op": "count"})
    assert (answer["kind"], answer["message"]) == (
        "timeout", TIMEOUT + "[connection timeout calling ismaster on 'mongodb-urls:27017']")
    # a caller's deadline shortens the wait, not the text: a C++ handler has no context to cancel
    for deadline_set in (True, False):
        short, ms = _call(twin, {"op": "count"}, 5_000.0, deadline_set)
        assert short["message"] == answer["message"]
        assert 5_000.0 <= ms < 5_100.0


def test_require_tls_closes_the_scanners_plaintext_ismaster() -> None:
    twin = _twin(7)
    twin.set_container_args("mongodb-urls", ["--auth", "--tlsMode", "requireTLS",
                                             "--tlsCertificateKeyFile", "/etc/tls/tls.pem"])
    twin.advance_to(twin.now + 60)
    assert twin.rollout_completed_at("mongodb-urls") is not None
    for _ in range(2):  # every connection alike: no connection number in the text
        assert _call(twin, {"op": "count"})[0] == {"code": 0, "kind": "tls", "code_name": "", "message": (
            TIMEOUT + "[Server closed connection. calling ismaster on 'mongodb-urls:27017']")}
    assert _call(twin, {"op": "count", "uri": URI + "&tls=true"})[0]["result"] >= 1
