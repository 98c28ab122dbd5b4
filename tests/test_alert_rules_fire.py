"""Every rule of the pack fires in the twin for at least one admitted catalog fault.

Each rule maps to catalog entries whose injection (by the orchestrator, as in a marathon) should
make it fire; the twin runs each entry once until every rule mapped to it has fired or its window
ends. A rule no admitted fault can make fire is dead weight for agents and is not shipped
(docs/fidelity.md, Telemetry, "Not modelled").
"""

from __future__ import annotations

from functools import cache

import pytest
from fault_alerts import rules_fired

from pytest_marathon.alerting.rules import load_rule_pack
from pytest_marathon.faults.catalog import load_catalog

#: entry -> (window in seconds after injection, rules it should make fire)
RUNS: dict[str, tuple[float, frozenset[str]]] = {
    "dep-image-tag-cartservice": (720.0, frozenset({
        "KubeDeploymentRolloutStuck", "KubeContainerWaiting", "DeploymentUnavailable", "KubePodNotReady",
        "DeploymentReplicasUnavailable", "DeploymentNotAvailable", "KubeDeploymentReplicasMismatch", "RedisNoClients",
        "RpcServerTrafficStopped", "DownstreamDependencyUnavailable", "DownstreamErrorRatioHigh",
        "FrontendAvailabilityLow", "RpcServerErrorRatioHigh", "RpcServerServiceErrorRatioCritical",
        "SpanErrorRatioHigh", "ServiceSpanErrorRatioCritical"})),
    "infra-memory-cartservice": (300.0, frozenset({"PodRestarting", "PodOOMKilled", "KubePodCrashLooping"})),
    "net-partition-frontend-cartservice": (300.0, frozenset({
        "DownstreamLatencyP95High", "FrontendLatencyP95High", "FrontendLatencyP99High",
        "FrontendSlowRequestRatioHigh", "SpanLatencyP95High"})),
    "dep-slow-currencyservice": (300.0, frozenset({"RpcServerLatencyP95High"})),
    # only the frontend's ads call carries a deadline (microservices-demo src/frontend/rpc.go getAd, 100 ms):
    # a delay on the frontend pod's traffic makes it expire; a partition elsewhere ends in CANCELLED
    "dep-slow-frontend": (300.0, frozenset({"DownstreamDeadlineExceeded"})),
    # checkoutservice answers UNAVAILABLE when ShipOrder fails after payment (src/checkoutservice/main.go);
    # a wrong address is UNAVAILABLE on the caller's client span, never on a server span
    "code-shipping-country-code": (300.0, frozenset({"RpcServerUnavailableResponses"})),
    # the hog's container keeps failing its liveness probe and restarting, so its 2m usage stays
    # below 90% of the limit; a limit cut below the load holds usage at (or, under 10m, above) it
    "infra-cpu-hog-cartservice": (300.0, frozenset({"CPUThrottlingHigh"})),
    "cfg-cpu-limit-productcatalogservice": (300.0, frozenset({"ContainerCpuNearLimit"})),
    "infra-node-checkoutservice": (300.0, frozenset({"KubeNodeNotReady"})),
    "dep-redis-outage": (300.0, frozenset({"RedisDown"})),
    "auth-redis-rotated": (300.0, frozenset({"RedisAuthFailures", "RedisFailedCommands"})),
    "db-redis-maxmemory": (300.0, frozenset({"RedisRejectedCommands", "RedisMemoryNearMax"})),
}


@cache
def _fired(entry_id: str) -> frozenset[str]:
    window, wanted = RUNS[entry_id]
    return frozenset(rules_fired(entry_id, run_for=window, wanted=wanted))


def test_every_rule_is_mapped_to_admitted_faults() -> None:
    admitted = {e.id for e in load_catalog("boutique").entries}
    assert set(RUNS) <= admitted
    mapped = set().union(*(rules for _, rules in RUNS.values()))
    assert mapped == {rule.name for rule in load_rule_pack("boutique").rules}


@pytest.mark.slow
@pytest.mark.parametrize("entry_id", sorted(RUNS))
def test_each_fault_fires_the_rules_mapped_to_it(entry_id: str) -> None:
    _, wanted = RUNS[entry_id]
    assert sorted(wanted - _fired(entry_id)) == []
