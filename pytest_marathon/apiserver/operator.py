"""The operator's side of the twin's API server: what a benchmark harness may do that an agent may not.

A Kubernetes backend drives the twin over HTTP with a bearer token (`operator_token`). With it,
and only with it, the server accepts:

- `POST /marathon/v1/<call>`: the backend calls a real cluster answers from other systems (the
  SLI, the image registry's sources and builds, the symptom probes of the catalog), as JSON in
  and out (`CALLS` lists them);
- deployment patches an agent's kubectl may not send: a release (image, env with `valueFrom`,
  resources, probes, `spec.strategy` and the `kubernetes.io/change-cause` annotation in one
  apply), an annotation of the change-cause alone;
- Chaos Mesh objects (`chaos-mesh.org/v1alpha1` PodChaos, NetworkChaos, StressChaos, Schedule):
  creating one starts the chaos its spec describes (`chaos_mesh.fault_of`), deleting it stops
  it, so the Chaos Toolkit actions that drive Chaos Mesh on a real cluster drive the twin.

Requests without the token fall through to the agent-facing API (`resources.KubeApi`), whose
refusals stay as they are. The server's lock is held around every call, as for every request.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from pytest_marathon.apiserver import changes, chaos_mesh, patches
from pytest_marathon.apiserver.identity import bears
from pytest_marathon.apiserver.resources import CLOCK_PATH, KubeApi, Reply, Target, json_reply
from pytest_marathon.apiserver.status import ApiError, bad_request, invalid, not_found
from pytest_marathon.backends.base import Backend, BackendError, SliSample

OPERATOR_PREFIX = "/marathon/v1/"
CHAOS_GROUP = "chaos-mesh.org/v1alpha1"
CHAOS_PLURALS = chaos_mesh.KINDS
CHANGE_CAUSE = "kubernetes.io/change-cause"
RESULT_ANNOTATION = "marathon.pytest.dev/result"

#: backend calls served under /marathon/v1/<name>, each with the keyword arguments it takes
CALLS: dict[str, tuple[str, ...]] = {
    "topology": (),
    "infrastructure": (),
    "logs": ("service", "since", "until", "level", "contains", "limit"),
    "sli_samples": ("since",),
    "probe": ("spec",),
    "artifact_value": ("artifact",),
    "source": ("service", "revision", "path"),
    "source_diff": ("service", "from_revision", "to_revision"),
    "flag_readers": ("name",),
    "rollout_completed_at": ("deployment", "revision"),
    "rollout_history": ("deployment",),
    "set_feature_flag": ("name", "value"),
    "build_image": ("service", "files"),
    "push_image": ("deployment", "image"),
    "chaos_start": ("kind", "target", "params"),
    "chaos_stop": ("handle",),
}


class OperatorApi:
    """Routes the operator's requests; `claims` says which requests are its own."""

    def __init__(self, api: KubeApi, token: str | None) -> None:
        self.api = api
        self.backend: Backend = api.backend
        self.token = token
        self._chaos: dict[str, dict[str, Any]] = {}  # object name -> {"handle", "object"}

    def claims(self, method: str, path: str, headers: Mapping[str, str]) -> bool:
        """The operator's calls and Chaos Mesh objects always (refused without the token); a
        deployment patch only with the token (without it, the agent-facing API judges it)."""
        if (path.startswith(OPERATOR_PREFIX) and path != CLOCK_PATH) or _chaos_target(path) is not None:
            return True
        return bears(headers, self.token) and method == "PATCH" and _deployment_target(path) is not None

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        if not bears(headers, self.token):
            raise ApiError(403, "Forbidden", f"{path} is for the benchmark's operator (bearer token) only")
        doc = _json(body)
        if path.startswith(OPERATOR_PREFIX) and path != CLOCK_PATH:
            return self._call(method, path[len(OPERATOR_PREFIX):], doc)
        chaos = _chaos_target(path)
        if chaos is not None:
            return self._chaos_request(method, chaos, doc)
        target = _deployment_target(path)
        assert target is not None
        return self._release(target, doc, headers.get("Content-Type", ""))

    # --- backend calls -------------------------------------------------------------------------------
    def _call(self, method: str, name: str, doc: Any) -> Reply:
        if method != "POST":
            raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed on {OPERATOR_PREFIX}{name}")
        if name not in CALLS:
            raise ApiError(404, "NotFound", f"no operator call {name!r}; calls: {', '.join(sorted(CALLS))}")
        args = doc or {}
        if not isinstance(args, dict) or set(args) - set(CALLS[name]):
            raise bad_request(f"{name} takes {', '.join(CALLS[name]) or 'no arguments'}")
        try:
            result = self._run(name, args)
        except BackendError as exc:
            return json_reply({"error": str(exc)}, 409)
        self.api.revision += name in ("set_feature_flag", "push_image", "chaos_start", "chaos_stop")
        return json_reply({"result": _plain(result)})

    def _run(self, name: str, args: dict[str, Any]) -> Any:
        backend = self.backend
        if name == "chaos_start":
            return backend.chaos_start(args["kind"], args["target"], **(args.get("params") or {}))
        if name in ("source", "rollout_completed_at"):
            first, *rest = CALLS[name]
            return getattr(backend, name)(args[first], **{k: args.get(k) for k in rest})
        if name in ("logs", "sli_samples"):
            return getattr(backend, name)(**args)
        # the rest take their arguments by position, in CALLS' order
        return getattr(backend, name)(*(args[k] for k in CALLS[name]))

    # --- Chaos Mesh objects --------------------------------------------------------------------------
    def _chaos_request(self, method: str, target: Target, doc: Any) -> Reply:
        kind = CHAOS_PLURALS[target.plural]
        if method == "POST" and target.name is None:
            if not isinstance(doc, dict) or doc.get("kind") != kind:
                raise bad_request(f"the body must be a {kind} object")
            meta = doc.get("metadata", {})
            name = meta.get("name")
            if not name:
                raise invalid(kind, "", "metadata.name", "Required value: name is required", "FieldValueRequired",
                              group="chaos-mesh.org")
            if name in self._chaos:
                raise ApiError(409, "AlreadyExists", f'{target.plural}.chaos-mesh.org "{name}" already exists')
            try:
                chaos, deployment, params = chaos_mesh.fault_of(kind, doc.get("spec") or {})
            except chaos_mesh.ChaosSpecError as exc:
                raise invalid(kind, name, exc.field, f"Unsupported value: {exc}", "FieldValueNotSupported",
                              group="chaos-mesh.org") from None
            try:
                handle = self.backend.chaos_start(chaos, deployment, **params)
            except BackendError as exc:
                raise invalid(kind, name, "spec", f"Invalid value: {exc}", "FieldValueInvalid",
                              group="chaos-mesh.org") from None
            obj = {**doc, "metadata": {**meta, "namespace": target.namespace, "uid": handle}}
            self._chaos[name] = {"handle": handle, "object": obj}
            self.api.revision += 1
            return json_reply(obj, 201)
        if target.name is None:
            items = [c["object"] for c in self._chaos.values() if c["object"]["kind"] == kind]
            return json_reply({"apiVersion": CHAOS_GROUP, "kind": f"{kind}List", "items": items})
        held = self._chaos.get(target.name)
        if held is None or held["object"]["kind"] != kind:
            raise not_found(f"{target.plural}", target.name, "chaos-mesh.org")
        if method == "DELETE":
            del self._chaos[target.name]
            self.backend.chaos_stop(held["handle"])
            self.api.revision += 1
            return json_reply(held["object"])
        if method == "GET":
            return json_reply(held["object"])
        raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed on {kind}")

    # --- releases ------------------------------------------------------------------------------------
    def _release(self, target: Target, patch: Any, content_type: str) -> Reply:
        """A deployment patch from the operator: a release as `kubectl apply` of a changed manifest
        sends it; one backend call, so the twin changes exactly as `Backend.release` changes it."""
        name = target.name
        assert name is not None
        current = self.api._one(Target("apps/v1", "deployments", target.namespace, name, None))
        try:
            desired = patches.apply(current, patch, content_type)
        except (patches.ApiUnsupported, patches.ApiConflict) as exc:
            raise ApiError(422, "Invalid", str(exc)) from None
        cause_now = current["metadata"].get("annotations", {}).get(CHANGE_CAUSE)
        cause = desired.get("metadata", {}).get("annotations", {}).get(CHANGE_CAUSE)
        if cause == cause_now:  # what an agent's kubectl may send (scale, restart, undo, set env) runs as it would
            replica_sets = [rs for rs in self.api.shaper.objects("replicasets", self.api.resource_version)
                            if rs["metadata"]["labels"].get("app") == name]
            try:
                plan = changes.plan_change(name, current, desired, replica_sets)
            except ApiError:
                plan = None  # more than an agent may change: a release
            if plan is not None:
                return self._agent_write(target, current, plan)
        release = release_args(current, desired)
        try:
            if release:
                if cause is not None and cause != cause_now or set(release) - {"image", "env", "resources"}:
                    result = self.backend.release(name, **release, change_cause=cause or "")
                elif "image" in release and len(release) == 1:
                    result = self.backend.deploy_image(name, release["image"])
                else:
                    result = self.backend.update_config(name, env=release.get("env"),
                                                        resources=release.get("resources"))
            elif cause is not None and cause != cause_now:
                self.backend.annotate_change_cause(name, cause)
                result = None
            else:
                return json_reply(current)
        except BackendError as exc:
            raise invalid("Deployment", name, "spec", f"Invalid value: {exc}", "FieldValueInvalid") from None
        self.api.revision += 1
        after = self.api._one(Target("apps/v1", "deployments", target.namespace, name, None))
        if result is not None:
            _attach(after, {"ok": result.ok, "message": result.message, "revision": result.revision,
                            "completes_at": result.completes_at})
        return json_reply(after)

    def _agent_write(self, target: Target, current: dict[str, Any], plan: changes.Plan) -> Reply:
        """A change an agent's kubectl may send too, carried out as the agent-facing API does."""
        assert target.name is not None
        if plan.empty():
            return json_reply(current)
        messages = changes.carry_out(self.backend, target.name, plan)
        self.api.revision += 1
        after = self.api._one(Target("apps/v1", "deployments", target.namespace, target.name, None))
        revision = after["metadata"].get("annotations", {}).get(changes.REVISION)
        _attach(after, {"ok": True, "message": messages[-1], "revision": int(revision) if revision else None,
                        "completes_at": self.backend.rollout_completed_at(target.name)})
        return json_reply(after)


def _attach(deployment: dict[str, Any], result: dict[str, Any]) -> None:
    """The backend's ActionResult of an operator's write, in the answer only (never stored): the
    operator's client reports it as the twin backend reports its own."""
    deployment["metadata"].setdefault("annotations", {})[RESULT_ANNOTATION] = json.dumps(result)


def release_args(current: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any]:
    """What a release changes, in `Backend.release`'s terms: the first container's image, env
    (a `valueFrom` document for a Secret reference, None for a removed variable), resources
    (`limits.cpu`, ...), probe fields (`{"readiness": {"port": ...}}`) and `spec.strategy`."""
    out: dict[str, Any] = {}
    have = current["spec"]["template"]["spec"]["containers"][0]
    want = desired.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [{}])[0]
    if want.get("image") != have.get("image"):
        out["image"] = want.get("image")
    old_env = {e["name"]: e for e in have.get("env", [])}
    new_env = {e.get("name"): e for e in want.get("env", [])}
    env: dict[str, Any] = {}
    for var, entry in new_env.items():
        if old_env.get(var) != entry:
            env[var] = dict(entry["valueFrom"]) if "valueFrom" in entry else str(entry.get("value", ""))
    env.update({var: None for var in old_env if var not in new_env})
    if env:
        out["env"] = env
    resources = {}
    for section in ("limits", "requests"):
        old, new = have.get("resources", {}).get(section, {}), want.get("resources", {}).get(section, {})
        resources.update({f"{section}.{res}": str(v) for res, v in new.items() if old.get(res) != v})
    if resources:
        out["resources"] = resources
    probes = {}
    for kind in ("readiness", "liveness"):
        old_p, new_p = probe_fields(have.get(f"{kind}Probe")), probe_fields(want.get(f"{kind}Probe"))
        changed = {k: v for k, v in new_p.items() if old_p.get(k) != v}
        if changed:
            probes[kind] = changed
    if probes:
        out["probes"] = probes
    strategy = changes.prune(desired.get("spec", {}).get("strategy"))
    if strategy != changes.prune(current["spec"].get("strategy")):
        out["strategy"] = strategy
    return out


def probe_fields(probe: Mapping[str, Any] | None) -> dict[str, Any]:
    """A Kubernetes probe as the backend's probe fields (type, port, path, headers, timings)."""
    if not probe:
        return {}
    out: dict[str, Any] = {}
    if "grpc" in probe and probe["grpc"] is not None:
        out = {"type": "grpc", "port": probe["grpc"]["port"]}
    elif "httpGet" in probe and probe["httpGet"] is not None:
        get = probe["httpGet"]
        out = {"type": "http", "port": get["port"], "path": get.get("path", "/")}
        if get.get("httpHeaders"):
            out["httpHeaders"] = [dict(h) for h in get["httpHeaders"]]
    elif "tcpSocket" in probe and probe["tcpSocket"] is not None:
        out = {"type": "tcp", "port": probe["tcpSocket"]["port"]}
    for key in ("initialDelaySeconds", "periodSeconds", "failureThreshold"):
        if key in probe:
            out[key] = probe[key]
    return out


def _chaos_target(path: str) -> Target | None:
    parts = [p for p in path.split("/") if p]
    if parts[:3] != ["apis", "chaos-mesh.org", "v1alpha1"] or len(parts) not in (6, 7):
        return None
    if parts[3] != "namespaces" or parts[5] not in CHAOS_PLURALS:
        return None
    return Target(CHAOS_GROUP, parts[5], parts[4], parts[6] if len(parts) == 7 else None, None)


def _deployment_target(path: str) -> Target | None:
    parts = [p for p in path.split("/") if p]
    if parts[:4] == ["apis", "apps", "v1", "namespaces"] and len(parts) == 7 and parts[5] == "deployments":
        return Target("apps/v1", "deployments", parts[4], parts[6], None)
    return None


def _json(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError as exc:
        raise bad_request(f"the request body is not JSON: {exc}") from None


def _plain(value: Any) -> Any:
    if isinstance(value, SliSample) or dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
