"""The API's request handling over a backend: reads, pod logs, deployment writes, the clock.

HTTP-free on purpose: `KubeApi.handle` takes a method, path, query and body and returns what
to send, so the routing can be read apart from the socket plumbing in `server.py`. Callers hold
the server's lock around every call: the twin is not thread-safe.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

from pytest_marathon.apiserver import changes, discovery, openapi, patches, service_changes, tables
from pytest_marathon.apiserver.identity import OPERATOR, bears, identity_of
from pytest_marathon.apiserver.selectors import field_matcher, label_matcher
from pytest_marathon.apiserver.shapes import CLUSTER_SCOPED, KINDS, Shaper, list_doc
from pytest_marathon.apiserver.status import ApiError, bad_request, forbidden, not_found
from pytest_marathon.backends.base import Backend, BackendError
from pytest_marathon.interface.policy import Policy, PolicyConfig
from pytest_marathon.interface.verdicts import Forbidden
from pytest_marathon.twin.objects import EPOCH, timestamp

CLOCK_PATH = "/marathon/v1/clock"
_GROUPS = {"v1": "", **discovery.GROUPS}
_WRITABLE = {"deployments", "deployments/scale"}


@dataclass
class Reply:
    status: int
    body: bytes
    content_type: str = "application/json"


def json_reply(doc: Any, status: int = 200) -> Reply:
    return Reply(status, json.dumps(doc, separators=(",", ":")).encode())


@dataclass(frozen=True)
class Target:
    """A resource request parsed from its path (kube-apiserver's RequestInfo, reduced)."""

    group_version: str
    plural: str
    namespace: str | None
    name: str | None
    subresource: str | None

    @property
    def resource(self) -> str:
        return f"{self.plural}/{self.subresource}" if self.subresource else self.plural


def parse_target(path: str) -> Target | None:
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        gv, rest = "v1", parts[2:]
    elif parts[:1] == ["apis"] and "/".join(parts[1:3]) in discovery.GROUPS:
        gv, rest = "/".join(parts[1:3]), parts[3:]
    else:
        return None
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    elif len(rest) == 2 and rest[0] == "namespaces":
        return Target(gv, "namespaces", None, rest[1], None)
    if not rest or len(rest) > 3:
        return None
    return Target(gv, rest[0], namespace, rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else None)


def verb_of(method: str, target: Target | None, query: Mapping[str, list[str]]) -> str:
    """The Kubernetes verb of a request (what RBAC and the audit log name)."""
    if method == "GET":
        if target is not None and target.name is None:
            return "watch" if query.get("watch", ["false"])[0] in ("true", "1") else "list"
        return "get"
    return {"PATCH": "patch", "PUT": "update", "POST": "create", "DELETE": "delete"}.get(method, method.lower())


class KubeApi:
    def __init__(self, backend: Backend, clock_token: str | None = None, operator_token: str | None = None) -> None:
        self.backend = backend
        # the operator (who runs the benchmark, holding this bearer token) may read beyond the
        # agent's namespace, so a dry-run of the monitoring manifests works with its kubeconfig
        self.operator_token = operator_token
        # set (to the reason) while a marathon is recorded: nothing may change behind the agent
        self.read_only: str | None = None
        # who may move time: anyone on loopback, or (with a token) only who holds it, so an
        # agent handed the kubeconfig cannot step the clock of the marathon it is scored on
        self.clock_token = clock_token
        self.shaper = Shaper(backend)
        self.revision = 0  # resourceVersion: bumped by every clock step and change
        self._seen_now = backend.now
        # the project's own policy words the refusals, so kubectl and the tools say the same
        self._policy = Policy(backend, PolicyConfig(), lambda _incident: False)

    @property
    def resource_version(self) -> str:
        # time moved by someone else (a marathon's runner steps the backend itself): a new
        # version, so watches and `rollout status` see the change
        if self.backend.now != self._seen_now:
            self._seen_now = self.backend.now
            self.revision += 1
        return str(self.revision + 1)

    def now_datetime(self) -> datetime:
        stamp = timestamp(self.backend.now) or EPOCH.isoformat()
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))

    # --- entry -------------------------------------------------------------------------------------------
    def handle(self, method: str, path: str, query_text: str, headers: Mapping[str, str], body: bytes) -> Reply:
        query = parse_qs(query_text, keep_blank_values=True)
        if self.read_only is not None and method not in ("GET", "HEAD"):
            raise ApiError(403, "Forbidden", self.read_only)
        if path == CLOCK_PATH:
            return self._clock(method, body, headers)
        static = self._discovery(path, headers)
        if static is not None:
            return static if method == "GET" else json_reply(
                ApiError(405, "MethodNotAllowed", f"{method} is not allowed on {path}").status(), 405)
        target = parse_target(path)
        if target is None or target.group_version not in discovery.GROUP_RESOURCES:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        verb = verb_of(method, target, query)
        if identity_of(headers, self.operator_token) == OPERATOR:
            self._served(target)
        else:
            self._authorize(target, verb)
        if method == "GET":
            return self._read(target, verb, query, headers)
        if method in ("PATCH", "PUT"):
            return self._write(target, method, query, headers, body)
        raise forbidden(target.resource, target.name, verb, target.namespace, "", _GROUPS[target.group_version])

    def exec_target(self, path: str, query: Mapping[str, list[str]], headers: Mapping[str, str]) -> tuple[str, str, list[str]]:
        """(pod, container, command) of a `pods/exec` request the caller may make; raises ApiError.
        An exec is the `create` verb on pods/exec, so a read-only server refuses it."""
        if self.read_only is not None:
            raise ApiError(403, "Forbidden", self.read_only)
        target = parse_target(path)
        if target is None or target.plural != "pods" or target.subresource != "exec" or target.name is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if identity_of(headers, self.operator_token) == OPERATOR:
            self._served(target)
        else:
            self._authorize(target, "create")
        self._one(Target(target.group_version, "pods", target.namespace, target.name, None))
        command = list(query.get("command", []))
        if not command:
            raise bad_request("you must specify at least one command for the container")
        return target.name, query.get("container", [""])[0], command

    # --- discovery and clock -----------------------------------------------------------------------------
    def _discovery(self, path: str, headers: Mapping[str, str]) -> Reply | None:
        path = path.rstrip("/") or "/"
        if path.startswith("/openapi/"):
            return _openapi(path, headers.get("Accept", ""))
        if path == "/version":
            return json_reply(discovery.version())
        if path == "/api":
            return json_reply(discovery.api_versions())
        if path == "/apis":
            return json_reply(discovery.api_groups())
        for gv in discovery.GROUP_RESOURCES:
            if path == ("/api/" if gv == "v1" else "/apis/") + gv:
                return json_reply(discovery.resource_list(gv))
        return None

    def _clock(self, method: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        if method == "POST" and self.clock_token is not None and not bears(headers, self.clock_token):
            raise ApiError(403, "Forbidden", "moving the clock needs the clock's bearer token")
        if method == "POST":
            try:
                doc = json.loads(body or b"{}")
                if "advance_by" in doc:
                    t = self.backend.now + float(doc["advance_by"])
                else:
                    t = float(doc["advance_to"])
            except (ValueError, KeyError, TypeError):
                raise bad_request('the clock takes {"advance_to": <virtual seconds>} or {"advance_by": <seconds>}') from None
            try:
                self.advance_to(t)
            except BackendError as exc:
                raise ApiError(409, "Conflict", str(exc)) from None
        elif method != "GET":
            raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed on {CLOCK_PATH}")
        return json_reply({"now": self.backend.now, "tick_seconds": self.backend.tick_seconds})

    def advance_to(self, t: float) -> None:
        before = self.backend.now
        self.backend.advance_to(t)
        if self.backend.now != before:
            self.revision += 1

    # --- authorization -----------------------------------------------------------------------------------
    def _authorize(self, target: Target, verb: str) -> None:
        """The RBAC an SRE agent gets: its application's namespace, never Secrets (the project's
        policy gives the reason, so the refusal reads the same from kubectl and from a tool)."""
        if target.plural in ("secret", "secrets"):
            try:
                self._policy.check_resource_kind("secrets")
            except Forbidden as exc:
                raise forbidden("secrets", target.name, verb, target.namespace, str(exc)) from None
        namespace = target.name if target.plural == "namespaces" else target.namespace
        try:
            self._policy.check_namespace(namespace)
        except Forbidden as exc:
            raise forbidden(target.resource, target.name, verb, target.namespace, str(exc),
                            _GROUPS[target.group_version]) from None
        self._served(target)

    def _served(self, target: Target) -> None:
        """Kinds discovery names but the twin does not keep (RBAC, ServiceAccounts,
        PrometheusRules, Secrets): not found, as on a cluster where none was created."""
        if target.plural not in KINDS:
            if target.name is not None and target.subresource is None:
                raise not_found(target.plural, target.name, _GROUPS[target.group_version])
            raise ApiError(404, "NotFound", "the server could not find the requested resource")

    # --- reads -------------------------------------------------------------------------------------------
    def objects(self, target: Target, query: Mapping[str, list[str]]) -> list[dict[str, Any]]:
        items = self.shaper.objects(target.plural, self.resource_version)
        labels = label_matcher(query.get("labelSelector", [""])[0])
        fields = field_matcher(query.get("fieldSelector", [""])[0])
        return [o for o in items if labels(o) and fields(o)]

    def _one(self, target: Target) -> dict[str, Any]:
        assert target.name is not None
        for obj in self.shaper.objects(target.plural, self.resource_version):
            if obj["metadata"]["name"] == target.name:
                return obj
        raise not_found(target.plural, target.name, _GROUPS[target.group_version])

    def _read(self, target: Target, verb: str, query: Mapping[str, list[str]], headers: Mapping[str, str]) -> Reply:
        if target.plural in CLUSTER_SCOPED and target.namespace is not None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if target.subresource == "log" and target.plural == "pods":
            return self._log(self._one(target), query)
        if target.subresource == "scale" and target.plural == "deployments":
            return json_reply(_scale_doc(self._one(target)))
        if target.subresource == "status" and target.plural == "deployments":
            return json_reply(self._one(target))
        if target.subresource is not None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if verb == "list":
            items = self.objects(target, query)
            if tables.wants_table(headers.get("Accept", "")):
                return json_reply(tables.table(target.plural, items, self.now_datetime(), self.resource_version))
            return json_reply(list_doc(target.plural, items, self.resource_version))
        obj = self._one(target)
        if tables.wants_table(headers.get("Accept", "")):
            return json_reply(tables.table(target.plural, [obj], self.now_datetime(), self.resource_version))
        return json_reply(obj)

    def _log(self, pod: dict[str, Any], query: Mapping[str, list[str]]) -> Reply:
        """`pods/log`: the container's lines, oldest first (tailLines, sinceSeconds, sinceTime,
        timestamps and limitBytes as PodLogOptions defines them, core/v1 types.go)."""
        name = pod["metadata"]["name"]
        container = query.get("container", [""])[0]
        containers = [c["name"] for c in pod["spec"]["containers"]]
        if container and container not in containers:
            raise bad_request(f"container {container} is not valid for pod {name}")
        since = None
        if query.get("sinceSeconds"):
            since = self.backend.now - float(query["sinceSeconds"][0])
        elif query.get("sinceTime"):
            stamp = datetime.fromisoformat(query["sinceTime"][0].replace("Z", "+00:00"))
            since = (stamp - EPOCH).total_seconds()
        lines = [line for line in self.backend.logs(service=pod["metadata"]["labels"].get("app"), since=since,
                                                    limit=100_000) if line.get("pod") == name]
        if query.get("tailLines"):
            tail = int(query["tailLines"][0])
            lines = lines[-tail:] if tail > 0 else []
        stamps = query.get("timestamps", ["false"])[0] in ("true", "1")
        text = "".join((f"{_nano(line['t'])} " if stamps else "") + str(line.get("message", "")) + "\n"
                       for line in lines)
        data = text.encode()
        if query.get("limitBytes"):
            data = data[: int(query["limitBytes"][0])]
        return Reply(200, data, "text/plain")

    # --- writes ------------------------------------------------------------------------------------------
    def _write(self, target: Target, method: str, query: Mapping[str, list[str]], headers: Mapping[str, str],
               body: bytes) -> Reply:
        if target.resource == "configmaps" and target.name is not None and self._flag_source(target.name):
            return self._write_flags(target, method, headers, body)
        if target.resource == "services" and target.name is not None:
            return self._write_service(target, method, query, headers, body)
        if target.resource not in _WRITABLE or target.name is None:
            verb = "patch" if method == "PATCH" else "update"
            raise forbidden(target.resource, target.name, verb, target.namespace, "", _GROUPS[target.group_version])
        current = self._one(Target(target.group_version, "deployments", target.namespace, target.name, None))
        before = _scale_doc(current) if target.subresource == "scale" else current
        desired = _desired(before, method, headers, body)
        if not isinstance(desired, dict):
            raise bad_request("the patched object is not a JSON object")
        if target.subresource == "scale":
            desired = _with_replicas(current, desired)
        replica_sets = [rs for rs in self.shaper.objects("replicasets", self.resource_version)
                        if rs["metadata"]["labels"].get("app") == target.name]
        plan = changes.plan_change(target.name, current, desired, replica_sets)
        if query.get("dryRun") or plan.empty():
            return json_reply(desired if query.get("dryRun") else before)
        changes.carry_out(self.backend, target.name, plan)
        self.revision += 1
        after = self._one(Target(target.group_version, "deployments", target.namespace, target.name, None))
        return json_reply(_scale_doc(after) if target.subresource == "scale" else after)

    def _write_service(self, target: Target, method: str, query: Mapping[str, list[str]],
                       headers: Mapping[str, str], body: bytes) -> Reply:
        """A patch or replace of a Service: a new targetPort is set through the backend (its
        Endpoints follow); any other change is refused and changes nothing."""
        current = self._one(target)
        desired = _desired(current, method, headers, body, patches.SERVICE_MERGE_KEYS)
        if not isinstance(desired, dict):
            raise bad_request("the patched object is not a JSON object")
        wanted = service_changes.plan_service_change(str(target.name), current, desired)
        if query.get("dryRun") or not wanted:
            return json_reply(desired if query.get("dryRun") else current)
        for index, port in sorted(wanted.items()):
            try:
                self.backend.set_service_target_port(str(target.name), port, index)
            except BackendError as exc:
                raise ApiError(422, "Invalid", str(exc)) from None
        self.revision += 1
        return json_reply(self._one(target))

    def _flag_source(self, configmap: str) -> Any:
        """The app's flag file ConfigMap (flagd's, Astronomy Shop), the one ConfigMap an operator
        edits in place: the demo's flagd-ui and AIOpsLab's fault injector both rewrite it."""
        source = getattr(getattr(self.backend, "spec", None), "flags", None)
        return source if source is not None and source.configmap == configmap else None

    def _write_flags(self, target: Target, method: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """A patch or replace of the flag file: each flag whose defaultVariant changed is set
        (flagd picks the file up); any other change to the file is refused and changes nothing."""
        source = self._flag_source(str(target.name))
        current = self._one(target)
        desired = _desired(current, method, headers, body)
        chosen = _flag_variants(desired, source.key)
        before = _flag_variants(current, source.key)
        if chosen is None or set(chosen) != set(before):
            raise ApiError(422, "Invalid", f"ConfigMap \"{target.name}\" is invalid: data.{source.key}: the twin "
                                           "applies a change of flags' defaultVariant only; the file must keep its flags")
        for name in sorted(chosen):
            if chosen[name] != before[name]:
                try:
                    result = self.backend.set_feature_flag(name, chosen[name])
                except BackendError as exc:
                    raise ApiError(422, "Invalid", str(exc)) from None
                if not result.ok:
                    raise ApiError(422, "Invalid", result.message)
        self.revision += 1
        return json_reply(self._one(target))


def _desired(current: dict[str, Any], method: str, headers: Mapping[str, str], body: bytes,
             merge_keys: dict[str, str] | None = None) -> Any:
    """The object a PUT sends, or `current` with a PATCH's body applied (its Content-Type says how)."""
    try:
        sent = json.loads(body or b"null")
    except ValueError as exc:
        raise bad_request(f"the request body is not JSON: {exc}") from None
    if method == "PUT":
        return sent
    try:
        return patches.apply(current, sent, headers.get("Content-Type", ""), merge_keys)
    except patches.ApiUnsupported as exc:
        raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {exc}") from None
    except patches.ApiConflict as exc:
        raise ApiError(422, "Invalid", str(exc)) from None


def _flag_variants(configmap: Any, key: str) -> dict[str, str] | None:
    """flag -> defaultVariant of a flag file ConfigMap document; None when it is not one."""
    try:
        flags = json.loads(configmap["data"][key])["flags"]
        return {name: str(flag["defaultVariant"]) for name, flag in flags.items()}
    except (KeyError, TypeError, ValueError):
        return None


def _openapi(path: str, accept: str) -> Reply:
    """`/openapi/v2` (protobuf when asked for it, as client-go does), `/openapi/v3` and its
    per-group-version documents; the `hash` query of the index's URLs is ignored."""
    if not openapi.available():
        return json_reply(ApiError(404, "NotFound", "the server could not find the requested resource").status(), 404)
    if path == "/openapi/v2":
        if "protobuf" in accept:
            return Reply(200, openapi.v2_protobuf(), "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
        return Reply(200, openapi.v2_json())
    if path == "/openapi/v3":
        return Reply(200, openapi.v3_index_json())
    group_version = path.removeprefix("/openapi/v3/")
    body = openapi.v3_group_json(group_version) if group_version in openapi.group_versions() else None
    if body is None:
        return json_reply(ApiError(404, "NotFound", "the server could not find the requested resource").status(), 404)
    return Reply(200, body)


def _scale_doc(deployment: dict[str, Any]) -> dict[str, Any]:
    """autoscaling/v1 Scale of a deployment (what `kubectl scale` reads and patches)."""
    meta = deployment["metadata"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                         if k in meta},
            "spec": {"replicas": deployment["spec"]["replicas"]},
            "status": {"replicas": deployment["status"].get("replicas", 0),
                       "selector": ",".join(f"{k}={v}" for k, v in sorted(selector.items()))}}


def _with_replicas(deployment: dict[str, Any], scale: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(deployment))
    out["spec"]["replicas"] = scale.get("spec", {}).get("replicas")
    return out


def _nano(t: float) -> str:
    stamp = timestamp(t) or ""
    return stamp.replace("Z", f".{int(round((t % 1) * 1e9)):09d}Z")


AuditHook = Callable[[dict[str, Any]], None]
