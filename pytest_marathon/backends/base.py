"""The seam every backend implements: the twin now, a Kubernetes cluster later.

Everything above this line (orchestrator, tools, runner) is written against `Backend`, so the same
scenarios, tools and scorer run on both. Agent actions arrive here already checked by the policy
layer; the fault API is for the orchestrator alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pytest_marathon.tsdb import SeriesStore


@dataclass(frozen=True)
class ActionResult:
    """What a mutation did. `completes_at` is when it took effect (rollout done), if it has."""

    ok: bool
    message: str
    revision: int | None = None
    completes_at: float | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BuildResult:
    """Outcome of building a service image from a working copy: a tag, or the failures."""

    ok: bool
    image: str | None
    failures: Sequence[str] = ()
    log: str = ""


@dataclass(frozen=True)
class SliSample:
    """Entry-point service level at one tick: request rate, failed and slow fractions."""

    t: float
    q: float
    e: float
    l: float  # noqa: E741 - the paper's name for the slow fraction


class BackendError(Exception):
    """A request the backend cannot carry out (unknown object, bad value); nothing changed."""


# How `artifact_value("env:svc/VAR")` reports a variable that takes its value from a Secret: the
# reference, never the credential. A release restores such a variable by passing the reference
# back as Kubernetes' `valueFrom` document (`secret_key_ref`).
SECRET_REF_PREFIX = "secretKeyRef:"

# An env value in a release: a literal, Kubernetes' `valueFrom` document (`{"secretKeyRef":
# {"name": ..., "key": ...}}`), or None to remove the variable.
EnvValue = str | Mapping[str, Any] | None


#: What `Backend.resources` reads (Secrets never).
RESOURCE_KINDS = ("deployments", "replicasets", "pods", "services", "configmaps", "nodes")


def resource_kind(kind: str, known: Sequence[str] = RESOURCE_KINDS) -> str:
    """The plural kind `resources(kind)` reads ("Pod" and "pods" alike); Secrets are refused
    whatever the backend, because no agent-facing read may carry a credential."""
    kind = kind.lower()
    if kind in ("secret", "secrets"):
        raise BackendError("secrets are not readable")
    if not kind.endswith("s"):
        kind += "s"
    if kind not in known:
        raise BackendError(f"unknown resource kind {kind!r}; known: {', '.join(known)}")
    return kind


def secret_ref_text(name: str, key: str) -> str:
    return f"{SECRET_REF_PREFIX}{name}/{key}"


def env_value_from_artifact(value: str | None) -> EnvValue:
    """The release value that puts back what `artifact_value("env:...")` read: a literal stays a
    literal, a Secret reference becomes its `valueFrom` document again."""
    if value is not None and value.startswith(SECRET_REF_PREFIX):
        name, _, key = value[len(SECRET_REF_PREFIX):].partition("/")
        return {"secretKeyRef": {"name": name, "key": key}}
    return value


@runtime_checkable
class Backend(Protocol):
    app: str
    namespace: str
    tick_seconds: float

    # clock ---------------------------------------------------------------------------------
    @property
    def now(self) -> float: ...

    def advance_to(self, t: float) -> None:
        """Run the live system until virtual time t (a multiple of the tick)."""

    # reads ---------------------------------------------------------------------------------
    @property
    def store(self) -> SeriesStore | None:
        """The metrics store PromQL runs on (None when a real Prometheus answers)."""

    def workloads(self) -> list[str]:
        """Deployments of the application (what agents may act on), sorted."""

    def infrastructure(self) -> list[str]:
        """Workloads that belong to the benchmark (load generator, monitoring): never targets."""

    def logs(
        self,
        *,
        service: str | None = None,
        since: float | None = None,
        until: float | None = None,
        level: str | None = None,
        contains: str | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]: ...

    def traces(
        self,
        *,
        service: str | None = None,
        since: float | None = None,
        until: float | None = None,
        errors_only: bool = False,
        min_duration_ms: float | None = None,
        limit: int = 20,
    ) -> list[dict[str, Any]]: ...

    def trace(self, trace_id: str) -> dict[str, Any] | None: ...

    def topology(self) -> dict[str, Any]: ...

    def resources(self, kind: str, name: str | None = None) -> list[dict[str, Any]]:
        """Kubernetes API JSON of deployments, pods, services, configmaps, nodes (never secrets)."""

    def events(
        self, *, since: float | None = None, object_name: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]: ...

    def rollout_history(self, deployment: str) -> list[dict[str, Any]]: ...

    def rollout_completed_at(self, deployment: str, revision: int | None = None) -> float | None:
        """Virtual time the rollout of `revision` (default: the current one) completed, i.e. the
        change an action started took effect; None while it is in progress or once a later
        revision superseded it. The runner polls this to record when interventions completed,
        because `ActionResult.completes_at` is only known at call time."""

    def source(
        self, service: str, *, revision: int | None = None, path: str | None = None
    ) -> dict[str, str]:
        """Deployed files of a service (of a revision, or one file)."""

    def source_diff(self, service: str, from_revision: int, to_revision: int) -> str: ...

    def sli_samples(self, since: float | None = None) -> list[SliSample]: ...

    def exec(self, pod: str, command: list[str], container: str = "") -> dict[str, Any]:
        """`kubectl exec <pod> -- <command>`: {"code", "stdout", "stderr"}; BackendError when the
        container cannot start the program."""

    def flag_readers(self, name: str) -> list[str]:
        """Workloads whose deployed code reads feature flag `name`, sorted: what a change of the
        flag acts on (the configmap is shared, but only these services behave differently).
        Read statically from the source, so a flag name the code computes is not seen."""

    # agent actions ---------------------------------------------------------------------------
    def restart(self, deployment: str) -> ActionResult: ...

    def scale(self, deployment: str, replicas: int) -> ActionResult: ...

    def rollback(self, deployment: str, to_revision: int | None = None) -> ActionResult: ...

    def update_config(
        self,
        deployment: str,
        *,
        env: Mapping[str, str | None] | None = None,
        resources: Mapping[str, str] | None = None,
        change_cause: str = "",
    ) -> ActionResult: ...

    def set_feature_flag(self, name: str, value: str) -> ActionResult: ...

    def set_container_args(self, deployment: str, args: list[str], change_cause: str = "") -> ActionResult:
        """Replace the container's command-line arguments (a new revision, rolled out as any
        template change; `rollout undo` brings the old ones back)."""

    def set_container_command(self, deployment: str, command: list[str], change_cause: str = "") -> ActionResult:
        """Replace the container's command (a new revision): in an image holding several programs
        (hotelReservation's) it picks the one that runs; `rollout undo` brings the old one back."""

    def set_node_selector(self, deployment: str, selector: Mapping[str, str] | None,
                          change_cause: str = "") -> ActionResult:
        """Replace the pod template's nodeSelector (None or {} removes it): a new revision whose
        pods stay Pending, FailedScheduling, while no node carries the labels."""

    def set_service_target_port(self, service: str, target_port: int, port_index: int = 0) -> ActionResult:
        """Point a Service's port at another container port (`spec.ports[i].targetPort`): its
        traffic goes there from now on, refused when no container listens on it."""

    def feature_flags(self) -> dict[str, str]:
        """Every feature flag the app reads and its current value: the `feature-flags` ConfigMap's
        entries, or for an app served by flagd each flag's default variant in the flag file."""

    def build_image(self, service: str, files: Mapping[str, str]) -> BuildResult: ...

    def deploy_image(self, deployment: str, image: str, change_cause: str = "") -> ActionResult: ...

    # fault API (orchestrator only) ---------------------------------------------------------
    def release(
        self,
        deployment: str,
        *,
        image: str | None = None,
        env: Mapping[str, EnvValue] | None = None,
        resources: Mapping[str, str] | None = None,
        probes: Mapping[str, Any] | None = None,
        patch: str | None = None,
        strategy: Mapping[str, Any] | None = None,
        change_cause: str,
    ) -> ActionResult:
        """Deliver a change as a new revision through the release pipeline (a code patch is
        built into a new image first). `strategy` is a Kubernetes `spec.strategy` document
        (`{"type": "Recreate"}`, or `RollingUpdate` with `rollingUpdate.maxSurge/maxUnavailable`)
        set in the same apply; alone it changes the deployment without a new revision. An env
        value replaces the variable's whole entry, as `kubectl set env` does: a literal set over
        a Secret reference drops the reference, a `valueFrom` document puts one back."""

    def push_image(self, deployment: str, image: str) -> None:
        """Publish the code the deployment runs now under another tag (the release pipeline
        building the same source as a new version), so a release of that tag pulls."""

    def annotate_change_cause(self, deployment: str, change_cause: str) -> None:
        """Set `kubernetes.io/change-cause` on the deployment; the deployment controller copies
        it onto the current ReplicaSet (how the initial deploy gets its text)."""

    def chaos_start(self, kind: str, target: str, **params: Any) -> str:
        """Start a direct fault; returns a handle for `chaos_stop`."""

    def chaos_stop(self, handle: str) -> None: ...

    # probes ----------------------------------------------------------------------------------
    def probe(self, spec: Mapping[str, Any]) -> bool:
        """Run a symptom check (synthetic request or condition); True when healthy.
        Probes leave no trace in telemetry agents can read."""

    def artifact_value(self, artifact: str) -> str | None:
        """The current value of a responsible artifact (`env:svc/VAR`, `image:svc`, …)."""
