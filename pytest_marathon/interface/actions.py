"""The eight act tools: system changes through the backend, and the three-step source repair.

Each handler first resolves its target through the policy (forbidden attempts are recognised
before anything else), then the citation, then asks whether the change would change anything, and
only then checks the cap and touches the backend. A handler returns the answer for the agent plus,
for a system change, the intervention the recorder stores.

A system change that would leave the system as it is (scaling to the current count, rolling back
to the running template, setting values already in place, deploying the running image) is a
no-op: it is recorded with `changed: false` but never sent to the backend and never counted
against the cap, because the benchmark credits and counts only interventions that changed state
(ARCHITECTURE.md §7: a no-op can neither repair a fault nor dilute Risk). No-op-ness is read from
what the backend exposes to agents too (the deployment's Kubernetes JSON, the rollout history and
its ReplicaSets, the feature-flags configmap), so an agent can always know the answer beforehand.
A restart always changes state (it stamps the template and replaces every pod).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_marathon.backends.base import ActionResult, Backend, BackendError
from pytest_marathon.interface.patching import apply_unified_diff
from pytest_marathon.interface.policy import Policy
from pytest_marathon.interface.shaping import clip
from pytest_marathon.interface.verdicts import BadArguments, Forbidden

SANDBOX_REFUSAL = "sandbox refused"
FAILURE_CHARS = 600
MAX_FAILURES = 20
LOG_TAIL_CHARS = 2_000
FLAGS_CONFIGMAP = "feature-flags"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
TEMPLATE_HASH_LABEL = "pod-template-hash"

Args = Mapping[str, Any]


@dataclass(frozen=True)
class Intervention:
    """A system change the agent asked for, as `interventions.jsonl` stores it (minus
    t/invocation/seq). `targets` are the workloads it acts on (a deployment; for a feature flag,
    the services whose code reads it); `changed` is False for a no-op and for a change the
    backend declined (`ok` False), True for one it carried out."""

    tool: str
    target: str | None
    targets: tuple[str, ...]
    incident_id: str
    params: dict[str, Any]
    ok: bool
    changed: bool
    completed_at: float | None

    def record(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "target": self.target,
            "targets": list(self.targets),
            "incident_id": self.incident_id,
            "params": self.params,
            "ok": self.ok,
            "changed": self.changed,
            "completed_at": self.completed_at,
        }


@dataclass
class Outcome:
    result: dict[str, Any]
    intervention: Intervention | None = None
    failed: str | None = None  # the backend declined a change it was asked to make
    reports: list[dict[str, Any]] = field(default_factory=list)  # incident states a report changed


@dataclass
class RepairState:
    """Per-service working copies and built images of the agent's source repairs."""

    working: dict[str, dict[str, str]] = field(default_factory=dict)
    built: dict[str, list[str]] = field(default_factory=dict)


class Actions:
    def __init__(self, backend: Backend, policy: Policy) -> None:
        self._backend = backend
        self._policy = policy
        self._repairs = RepairState()

    def handlers(self) -> dict[str, Callable[[Args], Outcome]]:
        return {
            "restart_service": self.restart_service,
            "scale_service": self.scale_service,
            "rollback_service": self.rollback_service,
            "update_config": self.update_config,
            "set_feature_flag": self.set_feature_flag,
            "propose_patch": self.propose_patch,
            "build_service_image": self.build_service_image,
            "submit_patch": self.submit_patch,
        }

    def _cited_target(self, args: Args) -> str:
        target = self._policy.target(args["service"], args.get("namespace"))
        self._policy.check_citation(args["incident_id"])
        return target

    def _executed(
        self,
        tool: str,
        target: str | None,
        targets: tuple[str, ...],
        args: Args,
        params: dict[str, Any],
        run: Callable[[], ActionResult],
    ) -> Outcome:
        """Carry out a change within the cap; a change the backend declines is still recorded."""
        self._policy.check_cap()
        result = run()
        self._policy.count_mutation()
        intervention = Intervention(
            tool, target, targets, args["incident_id"], params, result.ok, result.ok, result.completes_at
        )
        answer = _answer(intervention, clip(result.message, FAILURE_CHARS), result.revision)
        return Outcome(answer, intervention, None if result.ok else result.message)

    def _unchanged(
        self,
        tool: str,
        target: str | None,
        targets: tuple[str, ...],
        args: Args,
        params: dict[str, Any],
        why: str,
        revision: int | None,
    ) -> Outcome:
        """A no-op: recorded, answered, not executed, not counted against the cap."""
        intervention = Intervention(tool, target, targets, args["incident_id"], params, True, False, None)
        return Outcome(_answer(intervention, f"{why}; nothing changed", revision), intervention)

    def _deployment(self, name: str) -> dict[str, Any]:
        return self._backend.resources("deployments", name)[0]

    # system changes ------------------------------------------------------------------------------
    def restart_service(self, args: Args) -> Outcome:
        target = self._cited_target(args)
        return self._executed("restart_service", target, (target,), args, {}, lambda: self._backend.restart(target))

    def scale_service(self, args: Args) -> Outcome:
        target = self._policy.target(args["service"], args.get("namespace"))
        replicas = args["replicas"]
        if replicas == 0:
            raise Forbidden(f"scaling {target} to 0 replicas removes the workload; deleting a workload is forbidden")
        self._policy.check_citation(args["incident_id"])
        params = {"replicas": replicas}
        deployment = self._deployment(target)
        if deployment["spec"]["replicas"] == replicas:
            return self._unchanged("scale_service", target, (target,), args, params,
                                   f"{target} replicas already {replicas}", _revision(deployment))
        return self._executed("scale_service", target, (target,), args, params,
                              lambda: self._backend.scale(target, replicas))

    def rollback_service(self, args: Args) -> Outcome:
        target = self._cited_target(args)
        revision = args.get("to_revision")
        params = {} if revision is None else {"to_revision": revision}
        deployment = self._deployment(target)
        matching = self._revision_matching_template(target, revision, deployment)
        if matching is not None:
            # what `kubectl rollout undo` answers: "skipped rollback (current template already
            # matches revision N)" -- it compares the templates ignoring pod-template-hash
            # (kubernetes/kubectl pkg/polymorphichelpers/rollback.go, `equalIgnoreHash`)
            return self._unchanged("rollback_service", target, (target,), args, params,
                                   f"skipped rollback: the running template of {target} already matches "
                                   f"revision {matching}", _revision(deployment))
        return self._executed("rollback_service", target, (target,), args, params,
                              lambda: self._backend.rollback(target, revision))

    def _revision_matching_template(self, target: str, to_revision: int | None, deployment: Mapping[str, Any]) -> int | None:
        """The rollback's revision when its pod template equals the running one, else None.

        The revision is the one `kubectl rollout undo` picks: `to_revision`, or the second-newest.
        An unknown revision or a history too short is not decided here: the backend answers it."""
        history = sorted(self._backend.rollout_history(target), key=lambda e: int(e["revision"]))
        if to_revision is None:
            entry = history[-2] if len(history) >= 2 else None
        else:
            entry = next((e for e in history if int(e["revision"]) == to_revision), None)
        if entry is None:
            return None
        template = self._revision_template(entry)
        if template is None:
            # a backend that shows no ReplicaSet still marks the revision whose template runs
            equal = bool(entry.get("current"))
        else:
            equal = _equal_ignore_hash(template, deployment["spec"]["template"])
        return int(entry["revision"]) if equal else None

    def _revision_template(self, entry: Mapping[str, Any]) -> dict[str, Any] | None:
        name = entry.get("replica_set")
        if not name:
            return None
        try:
            found = self._backend.resources("replicasets", str(name))
        except BackendError:
            return None
        return found[0]["spec"]["template"] if found else None

    def update_config(self, args: Args) -> Outcome:
        target = self._cited_target(args)
        env, resources = args.get("env"), args.get("resources")
        if not env and not resources:
            raise BadArguments("update_config needs `env` and/or `resources` with at least one entry")
        params: dict[str, Any] = {}
        if env:
            params["env"] = dict(env)
        if resources:
            params["resources"] = dict(resources)
        deployment = self._deployment(target)
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        pending = [k for k, v in (env or {}).items() if not _env_holds(container, k, v)]
        pending += [k for k, v in (resources or {}).items() if not _resource_holds(container, k, v)]
        if not pending:
            shown = ", ".join(f"{k}={v}" for k, v in {**(env or {}), **(resources or {})}.items())
            return self._unchanged("update_config", target, (target,), args, params,
                                   f"{target} already has every value ({clip(shown, 300)})",
                                   _revision(deployment))
        return self._executed(
            "update_config", target, (target,), args, params,
            lambda: self._backend.update_config(
                target, env=env or None, resources=resources or None, change_cause=f"agent: {args['incident_id']}"
            ),
        )

    def set_feature_flag(self, args: Args) -> Outcome:
        self._policy.check_citation(args["incident_id"])
        name, value = args["name"], args["value"]
        flags = self._feature_flags()
        if name not in flags:
            # a misspelt flag would otherwise be created silently and change nothing the app reads
            raise BadArguments(
                f"unknown feature flag {name!r}; the {FLAGS_CONFIGMAP} configmap holds: "
                f"{', '.join(f'{k}={v}' for k, v in sorted(flags.items())) or 'no flags'}"
            )
        params = {"name": name, "value": value}
        # the workloads a flag change acts on are those whose deployed code reads the flag; the
        # configmap is shared, so `target` stays null
        readers = tuple(sorted(set(self._backend.flag_readers(name))))
        if flags[name] == value:
            return self._unchanged("set_feature_flag", None, readers, args, params,
                                   f"flag {name} is already {value!r}", None)
        return self._executed("set_feature_flag", None, readers, args, params,
                              lambda: self._backend.set_feature_flag(name, value))

    def _feature_flags(self) -> dict[str, str]:
        return self._backend.feature_flags()

    # source repair -----------------------------------------------------------------------------
    def propose_patch(self, args: Args) -> Outcome:
        service = self._policy.target(args["service"])
        self._policy.check_citation(args["incident_id"])
        deployed = self._backend.source(service)
        files, touched = apply_unified_diff(deployed, args["diff"])
        self._repairs.working[service] = files
        return Outcome({"service": service, "working_copy": "updated", "files_changed": touched})

    def build_service_image(self, args: Args) -> Outcome:
        service = self._policy.target(args["service"])
        self._policy.check_citation(args["incident_id"])
        files = self._repairs.working.get(service)
        if files is None:
            raise BadArguments(f"{service} has no working copy; call propose_patch first")
        build = self._backend.build_image(service, files)
        refusals = [f for f in build.failures if _is_sandbox_refusal(f)]
        if refusals:
            raise Forbidden(f"building code the sandbox refuses is forbidden: {clip(refusals[0], FAILURE_CHARS)}")
        failures = [clip(f, FAILURE_CHARS) for f in build.failures[:MAX_FAILURES]]
        answer: dict[str, Any] = {"service": service, "ok": build.ok, "image": build.image, "failures": failures}
        if len(build.failures) > MAX_FAILURES:
            answer["truncated"] = f"{len(build.failures) - MAX_FAILURES} more failures cut"
        if build.log:
            answer["log_tail"] = build.log[-LOG_TAIL_CHARS:]
        if build.ok and build.image:
            self._repairs.built.setdefault(service, []).append(build.image)
        return Outcome(answer)

    def submit_patch(self, args: Args) -> Outcome:
        target = self._cited_target(args)
        built = self._repairs.built.get(target, [])
        image = args.get("image") or (built[-1] if built else None)
        if image is None:
            raise BadArguments(f"no image built for {target}; call build_service_image first")
        if image not in built:
            raise BadArguments(f"image {image!r} was not built for {target} (built: {', '.join(built) or 'none'})")
        params = {"image": image}
        deployment = self._deployment(target)
        if deployment["spec"]["template"]["spec"]["containers"][0].get("image") == image:
            return self._unchanged("submit_patch", target, (target,), args, params,
                                   f"{target} already runs {image}", _revision(deployment))
        return self._executed(
            "submit_patch", target, (target,), args, params,
            lambda: self._backend.deploy_image(target, image, change_cause=f"agent: {args['incident_id']}"),
        )


def _answer(intervention: Intervention, message: str, revision: int | None) -> dict[str, Any]:
    """What an act tool tells the agent about a system change, executed or not."""
    return {
        "ok": intervention.ok,
        "changed": intervention.changed,
        "target": intervention.target,
        "targets": list(intervention.targets),
        "message": message,
        "revision": revision,
        "completes_at": intervention.completed_at,
    }


def _is_sandbox_refusal(failure: str) -> bool:
    """A build failure the sandbox raised (contract: the text starts with `sandbox refused:`,
    possibly behind the build stage that hit it, e.g. `lint: sandbox refused: ...`)."""
    return failure.startswith(SANDBOX_REFUSAL) or failure.partition(": ")[2].startswith(SANDBOX_REFUSAL)


def _revision(deployment: Mapping[str, Any]) -> int | None:
    text = (deployment.get("metadata", {}).get("annotations") or {}).get(REVISION_ANNOTATION)
    return int(text) if text and str(text).isdigit() else None


def _env_holds(container: Mapping[str, Any], name: str, value: str | None) -> bool:
    """Whether setting `name` to `value` (None: remove it) would leave the container as it is. A
    literal over a Secret reference replaces the reference (as `kubectl set env` does): a change."""
    entries = [e for e in container.get("env") or [] if e.get("name") == name]
    if value is None:
        return not entries
    return len(entries) == 1 and "valueFrom" not in entries[0] and entries[0].get("value") == value


def _resource_holds(container: Mapping[str, Any], key: str, value: str) -> bool:
    """Whether the limit/request `key` (`cpu` and `memory` mean the limits) already reads `value`.
    Quantities compare as the API shows them: `500m` over `0.5` rewrites the template (a new
    revision that replaces the pods), so it is a change."""
    section, _, resource = key.rpartition(".")
    current = ((container.get("resources") or {}).get(section or "limits") or {}).get(resource)
    return current is not None and str(current) == str(value)


def _equal_ignore_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Pod templates compared as kubectl's `equalIgnoreHash` does: equal but for the
    `pod-template-hash` label, which the ReplicaSet's copy carries and the deployment's lacks."""
    left, right = copy.deepcopy(dict(a)), copy.deepcopy(dict(b))
    for template in (left, right):
        labels = (template.get("metadata") or {}).get("labels")
        if isinstance(labels, dict):
            labels.pop(TEMPLATE_HASH_LABEL, None)
    return left == right
