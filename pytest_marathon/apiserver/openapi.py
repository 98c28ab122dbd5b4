"""The OpenAPI documents kubectl needs to validate, explain and patch: generated, never written by hand.

kubectl reads `/openapi/v3` (the index, then one document per group version) for `explain`,
patch computation and to ask whether the server validates fields itself, and `/openapi/v2` as
protobuf for client-side schema validation (kubectl pkg/cmd/util/factory_client_access.go
`Validator`: client-side validation runs when the server does not advertise the
`fieldValidation` parameter; client-go discovery/discovery_client.go `OpenAPISchema` asks for
`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`). The twin validates no field
itself, so it advertises no operation and kubectl validates every document as it would against
a server that predates server-side field validation.

The schemas come from the `kubernetes` Python client's models, which are generated from the
official specification: `openapi_types` gives each property's type, `attribute_map` its JSON
name, the pydantic fields whether it is required and its description. Definition names are the
official ones (`io.k8s.api.apps.v1.DeploymentSpec`), because kubectl prints them in validation
errors. The Python names drop the package: a nested model belongs to the package of the first
kind that reaches it, in the order core, apps, autoscaling, rbac, which is how the official
packages reference each other (apps' types refer to core's, never the other way); core's
PodTemplate is walked first for that alone, as apps reaches its PodTemplateSpec before any
served core kind does.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import types
import typing
from typing import Any

from pytest_marathon.apiserver import protobuf

#: (group, version, kind, Python model) of every kind the server serves or the manifests contain.
ROOT_KINDS: tuple[tuple[str, str, str, str], ...] = (
    ("", "v1", "Namespace", "V1Namespace"),
    ("", "v1", "Node", "V1Node"),
    ("", "v1", "Pod", "V1Pod"),
    ("", "v1", "Service", "V1Service"),
    ("", "v1", "Endpoints", "V1Endpoints"),
    ("", "v1", "ConfigMap", "V1ConfigMap"),
    ("", "v1", "Secret", "V1Secret"),
    ("", "v1", "ServiceAccount", "V1ServiceAccount"),
    ("", "v1", "Event", "CoreV1Event"),
    ("apps", "v1", "Deployment", "V1Deployment"),
    ("apps", "v1", "ReplicaSet", "V1ReplicaSet"),
    ("autoscaling", "v1", "Scale", "V1Scale"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", "V1ClusterRole"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "V1ClusterRoleBinding"),
    ("rbac.authorization.k8s.io", "v1", "Role", "V1Role"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", "V1RoleBinding"),
)
_PACKAGES = {"": "io.k8s.api.core.v1", "apps": "io.k8s.api.apps.v1", "autoscaling": "io.k8s.api.autoscaling.v1",
             "rbac.authorization.k8s.io": "io.k8s.api.rbac.v1"}
_META = "io.k8s.apimachinery.pkg.apis.meta.v1"
#: apimachinery's meta/v1 types among the models (their Python names carry no package).
_META_TYPES = frozenset({"ObjectMeta", "ListMeta", "LabelSelector", "LabelSelectorRequirement", "OwnerReference",
                         "ManagedFieldsEntry", "Status", "StatusDetails", "StatusCause", "Condition"})
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_PRIMITIVES: dict[str, dict[str, Any]] = {
    "str": {"type": "string"}, "int": {"type": "integer", "format": "int64"}, "bool": {"type": "boolean"},
    "float": {"type": "number", "format": "double"}, "datetime": {"type": "string", "format": "date-time"},
    "bytes": {"type": "string", "format": "byte"}, "bytearray": {"type": "string", "format": "byte"},
    "date": {"type": "string", "format": "date"}, "object": {},
}
_LIST = re.compile(r"^(?:List|list)\[(.+)\]$")
_DICT = re.compile(r"^(?:Dict\[str, |dict\(str, )(.+)[\])]$")
_PREFIX = re.compile(r"^(?:CoreV1|RbacV1|AppsV1|V1|V2|V1beta1)(?=[A-Z])")


def available() -> bool:
    """Whether the `kubernetes` client is installed (extras `cluster` and `test`): without its
    models there is nothing to generate from, and `/openapi/*` stays 404 as on old servers."""
    import importlib.util

    return importlib.util.find_spec("kubernetes") is not None


def _models() -> Any:
    from kubernetes.client import models

    return models


def _short(model: str) -> str:
    return _PREFIX.sub("", model)


class _Generator:
    """Walks the models from the root kinds; one schema per model, named as upstream names it."""

    def __init__(self) -> None:
        self.models = _models()
        self.names: dict[str, str] = {}  # Python model -> definition name
        self.schemas: dict[str, dict[str, Any]] = {}
        self.uses_int_or_string = False

    def name_of(self, model: str, group: str) -> str:
        if model not in self.names:
            short = _short(model)
            package = _META if short in _META_TYPES else _PACKAGES[group]
            self.names[model] = f"{package}.{short}"
        return self.names[model]

    def add(self, model: str, group: str, gvk: dict[str, str] | None = None) -> str:
        name = self.name_of(model, group)
        if name in self.schemas:
            return name
        cls = getattr(self.models, model)
        schema: dict[str, Any] = {"type": "object"}
        self.schemas[name] = schema  # before recursing: models refer to themselves (JSONSchemaProps)
        description = _class_description(cls)
        if description:
            schema["description"] = description
        fields = getattr(cls, "model_fields", {})
        properties: dict[str, Any] = {}
        required: list[str] = []
        for attr, type_text in cls.openapi_types.items():
            json_name = cls.attribute_map[attr]
            field = fields.get(attr)
            prop = self.type_schema(type_text, group, field)
            if field is not None and field.description:
                prop = {"description": field.description, **prop}
            properties[json_name] = prop
            if field is not None and field.is_required():
                required.append(json_name)
        schema["properties"] = dict(sorted(properties.items()))
        if required:
            schema["required"] = sorted(required)
        if gvk is not None:
            schema["x-kubernetes-group-version-kind"] = [gvk]
        return name

    def type_schema(self, text: str, group: str, field: Any = None) -> dict[str, Any]:
        text = text.strip()
        if text == "object" and field is not None and _is_int_or_string(field.annotation):
            self.uses_int_or_string = True
            return {"$ref": f"#/definitions/{INT_OR_STRING}"}
        if text in _PRIMITIVES:
            return dict(_PRIMITIVES[text])
        if m := _LIST.match(text):
            return {"type": "array", "items": self.type_schema(m.group(1), group)}
        if m := _DICT.match(text):
            return {"type": "object", "additionalProperties": self.type_schema(m.group(1), group)}
        return {"$ref": f"#/definitions/{self.add(text, group)}"}


def _is_int_or_string(annotation: Any) -> bool:
    """pydantic's annotation of an IntOrString field is `Union[int, str, None]`."""
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        return False
    bases = {typing.get_args(a)[0] if typing.get_origin(a) is typing.Annotated else a
             for a in typing.get_args(annotation)}
    return {int, str} <= bases


def _class_description(cls: type) -> str:
    """The first paragraph of the model's docstring: the official type description (the
    generator appends an `Attributes:` section of its own)."""
    doc = (cls.__doc__ or "").strip()
    head = doc.split("\n\n", 1)[0].strip()
    if not head or head.startswith(("NOTE:", "Attributes:")) or "auto generated" in head:
        return ""
    return " ".join(head.split())


@functools.lru_cache(maxsize=1)
def definitions() -> dict[str, dict[str, Any]]:
    """Every definition, keyed by its official name, in a stable order."""
    gen = _Generator()
    gen.name_of("V1PodTemplateSpec", "")  # core's, though only apps' kinds reach it here
    for group, version, kind, model in ROOT_KINDS:
        gen.add(model, group, {"group": group, "version": version, "kind": kind})
    if gen.uses_int_or_string:
        gen.schemas[INT_OR_STRING] = {"type": "string", "format": "int-or-string"}
    return dict(sorted(gen.schemas.items()))


def _closure(roots: list[str], defs: dict[str, dict[str, Any]]) -> list[str]:
    seen: list[str] = []
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        todo.extend(re.findall(r'"#/definitions/([^"]+)"', json.dumps(defs[name])))
    return sorted(seen)


# --- OpenAPI v2 -------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def v2_document() -> dict[str, Any]:
    """Swagger 2.0 with definitions and no paths: no operation, so no `fieldValidation`."""
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": {},
            "definitions": definitions()}


@functools.lru_cache(maxsize=1)
def v2_json() -> bytes:
    return json.dumps(v2_document(), separators=(",", ":")).encode()


@functools.lru_cache(maxsize=1)
def v2_protobuf() -> bytes:
    return protobuf.document(v2_document())


# --- OpenAPI v3 -------------------------------------------------------------------------------------
def group_versions() -> list[str]:
    """`api/v1`, `apis/apps/v1`, ...: the paths of the per-group-version documents."""
    out = []
    for group, version, _kind, _model in ROOT_KINDS:
        path = f"api/{version}" if not group else f"apis/{group}/{version}"
        if path not in out:
            out.append(path)
    return out


def _v3_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """v3 spelling: refs under `#/components/schemas/`, a described ref as `allOf` (a `$ref`
    has no siblings in OpenAPI 3.0), IntOrString as `x-kubernetes-int-or-string`."""
    if schema.get("format") == "int-or-string":
        return {"x-kubernetes-int-or-string": True}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref":
            out[key] = value.replace("#/definitions/", "#/components/schemas/")
        elif key == "properties":
            out[key] = {k: _v3_schema(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = _v3_schema(value)
        else:
            out[key] = value
    if "$ref" in out and len(out) > 1:
        out = {**{k: v for k, v in out.items() if k != "$ref"}, "allOf": [{"$ref": out["$ref"]}]}
    return out


@functools.cache
def v3_group_json(path: str) -> bytes | None:
    """One group version's document: its kinds and every schema they reach."""
    defs = definitions()
    roots = []
    for name, schema in defs.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            gv_path = f"api/{gvk['version']}" if not gvk["group"] else f"apis/{gvk['group']}/{gvk['version']}"
            if gv_path == path:
                roots.append(name)
    if not roots:
        return None
    schemas = {name: _v3_schema(defs[name]) for name in _closure(roots, defs)}
    doc = {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": _v3_paths(path, roots),
           "components": {"schemas": schemas}}
    return json.dumps(doc, separators=(",", ":")).encode()


def _v3_paths(gv_path: str, roots: list[str]) -> dict[str, Any]:
    """One item path per kind with `get` and `patch`, each naming its kind: `kubectl explain`
    finds a resource's kind through them (kubectl pkg/explain/v2/templates/plaintext.tmpl), and
    kubectl asks the `patch` operation whether the server validates fields (cli-runtime
    pkg/resource/query_param_verifier_v3.go); listing no `fieldValidation` parameter keeps
    validation on kubectl's side, where the twin's twin-less writes need it."""
    from pytest_marathon.apiserver import discovery

    defs = definitions()
    group_version = gv_path.removeprefix("api/").removeprefix("apis/")
    by_kind = {r["kind"]: r for r in discovery.GROUP_RESOURCES.get(group_version, []) if "/" not in r["name"]}
    paths: dict[str, Any] = {}
    for name in roots:
        [gvk] = defs[name]["x-kubernetes-group-version-kind"]
        resource = by_kind.get(gvk["kind"])
        if resource is None:
            continue
        scope = "namespaces/{namespace}/" if resource["namespaced"] else ""
        ref = {"$ref": f"#/components/schemas/{name}"}
        reply = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
        paths[f"/{gv_path}/{scope}{resource['name']}/{{name}}"] = {
            verb: {"operationId": f"{verb}{gvk['kind']}", "responses": reply, "x-kubernetes-action": verb,
                   "x-kubernetes-group-version-kind": gvk}
            for verb in ("get", "patch")}
    return dict(sorted(paths.items()))


@functools.lru_cache(maxsize=1)
def v3_index_json() -> bytes:
    """`/openapi/v3`: where each group version's document is, with a content hash that lets
    client-go cache it (client-go openapi/client.go, openapi/cached)."""
    paths = {}
    for path in group_versions():
        body = v3_group_json(path)
        assert body is not None
        digest = hashlib.sha512(body).hexdigest()[:128].upper()
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return json.dumps({"paths": paths}, separators=(",", ":")).encode()
