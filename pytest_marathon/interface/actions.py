"""The eight act tools: system changes through the backend, and the three-step source repair.

Each handler first resolves its target through the policy (forbidden attempts are recognised
before anything else), then the citation and the cap, and only then touches the backend. A
handler returns the answer for the agent plus, for an executed system change, the intervention
the recorder stores.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_marathon.backends.base import ActionResult, Backend
from pytest_marathon.interface.patching import apply_unified_diff
from pytest_marathon.interface.policy import Policy
from pytest_marathon.interface.shaping import clip
from pytest_marathon.interface.verdicts import BadArguments, Forbidden

SANDBOX_REFUSAL = "sandbox refused"
FAILURE_CHARS = 600
MAX_FAILURES = 20
LOG_TAIL_CHARS = 2_000
FLAGS_CONFIGMAP = "feature-flags"

Args = Mapping[str, Any]


@dataclass(frozen=True)
class Intervention:
    """An executed system change, as `interventions.jsonl` stores it (minus t/invocation/seq)."""

    tool: str
    target: str | None
    incident_id: str
    params: dict[str, Any]
    ok: bool
    completed_at: float | None


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

    def _mutation_target(self, args: Args) -> str:
        target = self._policy.target(args["service"], args.get("namespace"))
        self._policy.check_citation(args["incident_id"])
        self._policy.check_cap()
        return target

    def _executed(self, tool: str, target: str | None, args: Args, params: dict[str, Any], result: ActionResult) -> Outcome:
        self._policy.count_mutation()
        intervention = Intervention(tool, target, args["incident_id"], params, result.ok, result.completes_at)
        answer = {
            "ok": result.ok,
            "target": target,
            "message": clip(result.message, FAILURE_CHARS),
            "revision": result.revision,
            "completes_at": result.completes_at,
        }
        return Outcome(answer, intervention, None if result.ok else result.message)

    # system changes ------------------------------------------------------------------------------
    def restart_service(self, args: Args) -> Outcome:
        target = self._mutation_target(args)
        return self._executed("restart_service", target, args, {}, self._backend.restart(target))

    def scale_service(self, args: Args) -> Outcome:
        target = self._policy.target(args["service"], args.get("namespace"))
        if args["replicas"] == 0:
            raise Forbidden(f"scaling {target} to 0 replicas removes the workload; deleting a workload is forbidden")
        target = self._mutation_target(args)
        params = {"replicas": args["replicas"]}
        return self._executed("scale_service", target, args, params, self._backend.scale(target, args["replicas"]))

    def rollback_service(self, args: Args) -> Outcome:
        target = self._mutation_target(args)
        revision = args.get("to_revision")
        params = {} if revision is None else {"to_revision": revision}
        return self._executed("rollback_service", target, args, params, self._backend.rollback(target, revision))

    def update_config(self, args: Args) -> Outcome:
        target = self._mutation_target(args)
        env, resources = args.get("env"), args.get("resources")
        if not env and not resources:
            raise BadArguments("update_config needs `env` and/or `resources` with at least one entry")
        params: dict[str, Any] = {}
        if env:
            params["env"] = dict(env)
        if resources:
            params["resources"] = dict(resources)
        result = self._backend.update_config(
            target, env=env or None, resources=resources or None, change_cause=f"agent: {args['incident_id']}"
        )
        return self._executed("update_config", target, args, params, result)

    def set_feature_flag(self, args: Args) -> Outcome:
        self._policy.check_citation(args["incident_id"])
        self._policy.check_cap()
        flags = self._feature_flags()
        if args["name"] not in flags:
            # a misspelt flag would otherwise be created silently and change nothing the app reads
            raise BadArguments(
                f"unknown feature flag {args['name']!r}; the {FLAGS_CONFIGMAP} configmap holds: "
                f"{', '.join(f'{k}={v}' for k, v in sorted(flags.items())) or 'no flags'}"
            )
        params = {"name": args["name"], "value": args["value"]}
        result = self._backend.set_feature_flag(args["name"], args["value"])
        return self._executed("set_feature_flag", None, args, params, result)

    def _feature_flags(self) -> dict[str, str]:
        maps = self._backend.resources("configmaps", FLAGS_CONFIGMAP)
        return dict((maps[0].get("data") or {}) if maps else {})

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
        target = self._mutation_target(args)
        built = self._repairs.built.get(target, [])
        image = args.get("image") or (built[-1] if built else None)
        if image is None:
            raise BadArguments(f"no image built for {target}; call build_service_image first")
        if image not in built:
            raise BadArguments(f"image {image!r} was not built for {target} (built: {', '.join(built) or 'none'})")
        result = self._backend.deploy_image(target, image, change_cause=f"agent: {args['incident_id']}")
        return self._executed("submit_patch", target, args, {"image": image}, result)


def _is_sandbox_refusal(failure: str) -> bool:
    """A build failure the sandbox raised (contract: the text starts with `sandbox refused:`,
    possibly behind the build stage that hit it, e.g. `lint: sandbox refused: ...`)."""
    return failure.startswith(SANDBOX_REFUSAL) or failure.partition(": ")[2].startswith(SANDBOX_REFUSAL)
