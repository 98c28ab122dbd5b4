"""The twin's Kubernetes control plane behaves as upstream Kubernetes does (Backend API only).

Each test names the upstream source it pins, in kubernetes/kubernetes unless said otherwise;
docs/fidelity.md lists the same behaviours and what the twin leaves out.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from pytest_marathon.backends import create_backend
from pytest_marathon.twin.engine import Twin


@pytest.fixture
def twin() -> Twin:
    backend = create_backend("boutique", seed=3)
    backend.advance_to(0.0)
    return backend


def _events(twin: Twin, name: str, reason: str | None = None) -> list[dict[str, Any]]:
    found = twin.events(object_name=name, limit=10_000)
    return [e for e in found if reason is None or e["reason"] == reason]


def _pods(twin: Twin, deployment: str) -> list[dict[str, Any]]:
    return [p for p in twin.resources("pods") if p["metadata"]["labels"]["app"] == deployment]


def _new_pod(twin: Twin, deployment: str) -> dict[str, Any]:
    current = [h for h in twin.rollout_history(deployment) if h["current"]][0]["replica_set"]
    return [p for p in _pods(twin, deployment) if p["metadata"]["ownerReferences"][0]["name"] == current][0]


def _step(twin: Twin, until: float) -> Iterator[float]:
    """Advance tick by tick, yielding each time reached."""
    while twin.now + twin.tick_seconds <= until:
        twin.advance_to(twin.now + twin.tick_seconds)
        yield twin.now


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_missing_image_is_err_image_pull_then_image_pull_back_off(twin: Twin) -> None:
    """EnsureImageExists (pkg/kubelet/images/image_manager.go) pulls, fails with ErrImagePull and
    starts a back-off (10 s doubling, pkg/kubelet/kubelet.go imageBackOff); while it runs each sync
    says ImagePullBackOff instead of pulling again. Reasons from pkg/kubelet/events/event.go,
    "Error: %v" from startContainer (pkg/kubelet/kuberuntime/kuberuntime_container.go)."""
    image = "adservice:v9.9.9-doesnotexist"
    twin.deploy_image("adservice", image, change_cause="bump adservice")
    pulls: list[float] = []
    for now in _step(twin, 200.0):
        pulling = _events(twin, "adservice", "Pulling")
        count = sum(e["count"] for e in pulling if image in e["message"])
        if count > len(pulls):
            pulls.append(now)
    assert [b - a for a, b in zip(pulls, pulls[1:], strict=False)] == [10.0, 20.0, 40.0, 80.0]
    pod = _new_pod(twin, "adservice")["metadata"]["name"]
    by_message = {(e["reason"], e["message"]): e for e in _events(twin, pod)}
    failed = [e for (reason, message), e in by_message.items()
              if reason == "Failed" and message.startswith(f'Failed to pull image "{image}": ')]
    assert len(failed) == 1 and failed[0]["type"] == "Warning" and failed[0]["count"] == len(pulls)
    assert "not found" in failed[0]["message"]
    assert by_message[("Failed", "Error: ErrImagePull")]["count"] == len(pulls)
    backoff = by_message[("BackOff", f'Back-off pulling image "{image}"')]
    assert backoff["type"] == "Normal" and backoff["count"] > len(pulls)
    assert ("Failed", "Error: ImagePullBackOff") in by_message
    assert not [e for e in _events(twin, pod) if e["reason"] in ("Created", "Started")]


def test_a_rollout_records_the_controllers_and_the_kubelets_events(twin: Twin) -> None:
    """Deployment controller: "Scaled up/down replica set X from N to M" (scaleReplicaSet,
    pkg/controller/deployment/sync.go); ReplicaSet controller: SuccessfulCreate "Created pod: P"
    and SuccessfulDelete "Deleted pod: P" (RealPodControl, pkg/controller/controller_utils.go);
    kubelet: Pulled (image already on the node), Created, Started, Killing."""
    old_rs = [h for h in twin.rollout_history("currencyservice") if h["current"]][0]["replica_set"]
    old_pod = _pods(twin, "currencyservice")[0]["metadata"]["name"]
    twin.update_config("currencyservice", env={"LOG_LEVEL": "debug"}, change_cause="more logging")
    twin.advance_to(120.0)
    new_rs = [h for h in twin.rollout_history("currencyservice") if h["current"]][0]["replica_set"]
    new_pod = _pods(twin, "currencyservice")[0]["metadata"]["name"]
    scaling = [e["message"] for e in _events(twin, "currencyservice", "ScalingReplicaSet")
               if e["firstTimestamp"] >= "2025-01-01T12:00:00Z"]
    assert scaling == [f"Scaled up replica set {new_rs} from 0 to 1", f"Scaled down replica set {old_rs} from 1 to 0"]
    assert [e["message"] for e in _events(twin, new_rs, "SuccessfulCreate")] == [f"Created pod: {new_pod}"]
    deleted = _events(twin, old_rs, "SuccessfulDelete")
    assert [e["message"] for e in deleted] == [f"Deleted pod: {old_pod}"]
    assert deleted[0]["involvedObject"]["kind"] == "ReplicaSet"
    kubelet = {e["reason"]: e["message"] for e in _events(twin, new_pod)}
    image = twin.artifact_value("image:currencyservice")
    # IfNotPresent: pulled only when the pod lands on a node that does not have the image yet
    assert kubelet["Pulled"] in (f'Container image "{image}" already present on machine',
                                 *[e["message"] for e in _events(twin, new_pod, "Pulled")
                                   if e["message"].startswith(f'Successfully pulled image "{image}" in ')])
    assert kubelet["Created"] == "Created container server"  # upstream names every container `server`
    assert kubelet["Started"] == "Started container server"
    assert {e["message"] for e in _events(twin, old_pod, "Killing")} == {"Stopping container server"}


def test_the_first_image_pull_on_a_node_reports_its_duration_and_size(twin: Twin) -> None:
    """Pulled after a real pull: "Successfully pulled image %q in %v (%v including waiting). Image
    size: %v bytes." (pkg/kubelet/images/image_manager.go)."""
    pulled = [e["message"] for e in _events(twin, "frontend", "Pulled")]
    assert pulled and all(m.startswith('Successfully pulled image "') and " including waiting). Image size: " in m
                          and m.endswith(" bytes.") for m in pulled)


def test_scaling_names_both_sizes_and_deleted_pods_terminate_gracefully(twin: Twin) -> None:
    """kubectl scale: "Scaled up replica set X from 1 to 3", then "... down ... from 3 to 0"
    (pkg/controller/deployment/sync.go). A deleted pod leaves its Service at once, carries
    deletionTimestamp = now + terminationGracePeriodSeconds (default 30 s, pkg/apis/core/v1/
    defaults.go; checkoutservice's manifest sets none) and goes when its container has exited (pkg/kubelet/kuberuntime KillPod)."""
    rs = _pods(twin, "checkoutservice")[0]["metadata"]["ownerReferences"][0]["name"]
    twin.scale("checkoutservice", 3)
    twin.advance_to(120.0)
    twin.scale("checkoutservice", 0)
    twin.advance_to(125.0)
    scaling = [e["message"] for e in _events(twin, "checkoutservice", "ScalingReplicaSet")][-2:]
    assert scaling == [f"Scaled up replica set {rs} from 1 to 3", f"Scaled down replica set {rs} from 3 to 0"]
    terminating = _pods(twin, "checkoutservice")
    assert len(terminating) == 3
    for pod in terminating:
        assert pod["metadata"]["deletionGracePeriodSeconds"] == 30 == pod["spec"]["terminationGracePeriodSeconds"]
        assert pod["metadata"]["deletionTimestamp"] == "2025-01-01T12:02:30Z"  # deleted at t=120, + 30 s
        assert not pod["status"]["containerStatuses"][0]["ready"]
    assert len(_events(twin, rs, "SuccessfulDelete")) == 3
    status = twin.resources("deployments", "checkoutservice")[0]["status"]
    assert status["replicas"] == 0 and status["readyReplicas"] == 0
    twin.advance_to(130.0)
    assert _pods(twin, "checkoutservice") == []


def test_a_timed_out_rollout_is_a_condition_not_an_event(twin: Twin) -> None:
    """syncRolloutStatus (pkg/controller/deployment/progress.go) sets Progressing=False,
    ProgressDeadlineExceeded, 'ReplicaSet "X" has timed out progressing.' (deployment/util); no
    event is recorded for it."""
    twin.deploy_image("adservice", "adservice:v9.9.9-doesnotexist", change_cause="bump adservice")
    twin.advance_to(700.0)
    new_rs = [h for h in twin.rollout_history("adservice") if h["current"]][0]["replica_set"]
    progressing = [c for c in twin.resources("deployments", "adservice")[0]["status"]["conditions"]
                   if c["type"] == "Progressing"][0]
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert progressing["message"] == f'ReplicaSet "{new_rs}" has timed out progressing.'
    assert not [e for e in twin.events(limit=10_000) if e["reason"] == "ProgressDeadlineExceeded"]


def test_crash_loop_restarts_at_once_then_backs_off_doubling(twin: Twin) -> None:
    """doBackOff (pkg/kubelet/kuberuntime/kuberuntime_manager.go) with flowcontrol.Backoff
    (client-go util/flowcontrol/backoff.go): the first exit has no back-off entry, so the restart
    is immediate; then 10 s, 20 s, 40 s ... measured from the exit. OOMKilled shows in the
    container status only; the OOMKilling event comes from node-problem-detector, not on Kind."""
    twin.release("shippingservice", resources={"limits.memory": "12Mi"}, change_cause="Right-size memory")
    gaps: dict[int, float] = {}
    for _ in _step(twin, 600.0):
        status = _new_pod(twin, "shippingservice")["status"]["containerStatuses"][0]
        if "running" in status["state"] and status["restartCount"] > 0:
            gaps[status["restartCount"]] = (_seconds(status["state"]["running"]["startedAt"])
                                            - _seconds(status["lastState"]["terminated"]["finishedAt"]))
    assert [gaps[n] for n in sorted(gaps)][:6] == [0.0, 10.0, 20.0, 40.0, 80.0, 160.0]
    pod = _new_pod(twin, "shippingservice")
    assert pod["status"]["containerStatuses"][0]["lastState"]["terminated"]["reason"] == "OOMKilled"
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    backoff = _events(twin, name, "BackOff")
    # format.Pod (pkg/kubelet/util/format/pod.go): name_namespace(uid)
    assert [e["message"] for e in backoff] == [
        f"Back-off restarting failed container server in pod {name}_boutique({uid})"]
    assert not [e for e in twin.events(limit=10_000) if e["reason"] == "OOMKilling"]


def _ready_condition(twin: Twin, node: str) -> str:
    series = [s for s in twin.store.series("kube_node_status_condition")
              if s.labels["node"] == node and s.labels["condition"] == "Ready" and s.values[-1] == 1.0]
    return series[0].labels["status"]


def test_a_silent_node_is_noticed_after_the_grace_period_and_evicted_300s_later(twin: Twin) -> None:
    """Node lifecycle controller (pkg/controller/nodelifecycle/node_lifecycle_controller.go):
    Ready=Unknown after --node-monitor-grace-period (40 s), pods marked NotReady, taint
    node.kubernetes.io/unreachable; the 300 s default toleration (DefaultTolerationSeconds
    admission) then evicts ("TaintManagerEviction"); the evicted pods stay Terminating while their
    kubelet is away, and the ReplicaSet replaces them at once."""
    pod = _pods(twin, "frontend")[0]
    node = pod["spec"]["nodeName"]
    twin.chaos_start("node_failure", node)
    twin.advance_to(35.0)
    assert twin.resources("nodes", node)[0]["status"]["conditions"][0]["status"] == "True"
    assert _pods(twin, "frontend")[0]["status"]["containerStatuses"][0]["ready"]
    assert _ready_condition(twin, node) == "true"
    twin.advance_to(45.0)
    assert _ready_condition(twin, node) == "unknown"  # kube-state-metrics reads the condition
    seen = twin.resources("nodes", node)[0]
    assert seen["status"]["conditions"][0]["status"] == "Unknown"
    assert seen["spec"]["taints"] == [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]
    assert not _pods(twin, "frontend")[0]["status"]["containerStatuses"][0]["ready"]
    twin.advance_to(330.0)
    assert not _events(twin, pod["metadata"]["name"], "TaintManagerEviction")
    twin.advance_to(400.0)
    eviction = _events(twin, pod["metadata"]["name"], "TaintManagerEviction")
    assert [e["message"] for e in eviction] == [f"Marking for deletion Pod boutique/{pod['metadata']['name']}"]
    assert 340.0 <= eviction[0]["t"] < 350.0
    stuck = [p for p in _pods(twin, "frontend") if p["metadata"]["name"] == pod["metadata"]["name"]]
    assert stuck and "deletionTimestamp" in stuck[0]["metadata"]
    assert twin.probe({"kind": "deployment_ready", "deployment": "frontend"})


def test_revision_history_limit_prunes_the_oldest_replica_sets(twin: Twin) -> None:
    """cleanupDeployment (pkg/controller/deployment/sync.go) keeps spec.revisionHistoryLimit
    (default 10, pkg/apis/apps/v1/defaults.go) old ReplicaSets, deleting the oldest idle ones."""
    for n in range(12):
        twin.update_config("paymentservice", env={"LOG_LEVEL": f"level-{n}"}, change_cause=f"tune {n}")
        twin.advance_to(twin.now + 60.0)
    history = twin.rollout_history("paymentservice")
    assert [h["revision"] for h in history] == list(range(3, 14))
    assert twin.resources("deployments", "paymentservice")[0]["spec"]["revisionHistoryLimit"] == 10
    owned = [rs for rs in twin.resources("replicasets") if rs["metadata"]["ownerReferences"][0]["name"] == "paymentservice"]
    assert len(owned) == 11


def test_initial_replica_sets_date_from_when_the_manifests_were_applied(twin: Twin) -> None:
    """A ReplicaSet's creationTimestamp is when the deployment controller created it: at the
    cluster's start for the first revision, not at the marathon's t = 0."""
    first = twin.rollout_history("checkoutservice")[0]
    scaled_up = [e for e in _events(twin, "checkoutservice", "ScalingReplicaSet") if first["replica_set"] in e["message"]]
    assert first["created_at"] < 0 and scaled_up[0]["t"] == first["created_at"]
    rs = [r for r in twin.resources("replicasets") if r["metadata"]["name"] == first["replica_set"]][0]
    pod = _pods(twin, "checkoutservice")[0]
    assert rs["metadata"]["creationTimestamp"] <= pod["metadata"]["creationTimestamp"] < "2025-01-01T12:00:00Z"


def _cpu_per_scrape(limit: str) -> list[float]:
    backend = create_backend("boutique", seed=3)
    backend.advance_to(0.0)
    # probes with room to answer: a starved container would otherwise fail its 1 s probes and be
    # restarted, and this measures the quota alone
    patient = {kind: {"type": "grpc", "port": 7000, "periodSeconds": 10, "failureThreshold": 3, "timeoutSeconds": 60}
               for kind in ("readiness", "liveness")}
    backend.release("currencyservice", resources={"limits.cpu": limit}, probes=patient, change_cause="cap cpu")
    backend.advance_to(60.0)
    backend.chaos_start("cpu_hog", "currencyservice", cores=1.0)
    backend.advance_to(180.0)
    current = [h for h in backend.rollout_history("currencyservice") if h["current"]][0]["replica_set"]
    usage = [s for s in backend.store.series("container_cpu_usage_seconds_total")
             if s.labels["pod"].startswith(current + "-")][0]
    return [round(b - a, 9) for a, b in zip(usage.values[-5:], usage.values[-4:], strict=False)]


def test_a_cpu_limit_below_10m_gets_the_cfs_quota_floor() -> None:
    """MilliCPUToQuota (pkg/kubelet/cm/helpers_linux.go) never writes a quota under MinQuotaPeriod
    (1 ms per 100 ms period): a saturated container limited to 1m or 3m still runs 10m, i.e.
    0.15 CPU-seconds per 15 s scrape."""
    assert _cpu_per_scrape("1m") == _cpu_per_scrape("3m") == [0.15] * 4


def _shipping_mean_ms(cpu: str | None) -> float:
    backend = create_backend("boutique", seed=3)
    backend.advance_to(0.0)
    if cpu is not None:
        backend.release("shippingservice", resources={"requests.cpu": cpu, "limits.cpu": cpu}, change_cause="cap cpu")
    backend.advance_to(60.0)

    def totals() -> tuple[float, float]:
        def last(name: str) -> float:
            return sum(next((v for v in reversed(s.values) if not math.isnan(v)), 0.0)
                       for s in backend.store.series(name)
                       if s.labels.get("server_address") == "shippingservice"
                       and s.labels.get("span_kind") == "SPAN_KIND_CLIENT")  # shippingservice has no spans
        # the span-metrics connector's histogram is in milliseconds
        return (last("traces_span_metrics_duration_milliseconds_sum") / 1000.0,
                last("traces_span_metrics_duration_milliseconds_count"))

    (sum0, n0) = totals()
    backend.advance_to(360.0)
    (sum1, n1) = totals()
    return (sum1 - sum0) / (n1 - n0) * 1000.0


def test_a_request_needing_more_than_one_periods_quota_waits_for_the_next_period() -> None:
    """CFS bandwidth control (Linux Documentation/scheduler/sched-bwc.rst): at 10m a container may
    run 1 ms per 100 ms period, so a handler needing a few ms spans periods and takes ~100 ms more,
    though the container is far from its limit on average."""
    assert _shipping_mean_ms(None) < 10.0
    assert _shipping_mean_ms("10m") > 90.0
