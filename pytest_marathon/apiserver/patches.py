"""The three patch formats a Kubernetes API server accepts, applied to a JSON document.

* JSON patch (RFC 6902, `application/json-patch+json`): what `kubectl rollout undo` sends
  (kubectl pkg/polymorphichelpers/rollback.go getDeploymentPatch: replace /spec/template and
  /metadata/annotations).
* JSON merge patch (RFC 7386, `application/merge-patch+json`): what `kubectl scale` sends to
  the scale subresource.
* Strategic merge patch (`application/strategic-merge-patch+json`): what `kubectl set env`,
  `set image`, `rollout restart` and `patch` send by default. Lists with a patch merge key are
  merged item by item (k8s.io/api core/v1 types.go: containers and env by `name`, ports by
  `containerPort`); directives `$patch: delete|replace`, `$setElementOrder/<list>` and
  `$retainKeys` as k8s.io/apimachinery pkg/util/strategicpatch/patch.go reads them.

Only the documents a deployment has are patched, so only their merge keys are known; any
other list is replaced whole, as a merge patch does.
"""

from __future__ import annotations

import copy
from typing import Any

from pytest_marathon.apiserver.status import bad_request

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name", "ports": "containerPort",
              "volumeMounts": "mountPath", "volumes": "name", "imagePullSecrets": "name"}


#: a Service's ports merge by `port` (k8s.io/api core/v1 types.go ServiceSpec.Ports
#: `patchMergeKey:"port"`), not by a container's `containerPort`
SERVICE_MERGE_KEYS = {**MERGE_KEYS, "ports": "port"}


def apply(doc: dict[str, Any], patch: Any, content_type: str,
          merge_keys: dict[str, str] | None = None) -> dict[str, Any]:
    kind = content_type.split(";")[0].strip().lower()
    if kind == JSON_PATCH:
        if not isinstance(patch, list):
            raise bad_request("json patch must be a list of operations")
        return json_patch(doc, patch)
    if not isinstance(patch, dict):
        raise bad_request("a merge patch must be a JSON object")
    if kind == MERGE_PATCH:
        return merge_patch(doc, patch)
    if kind == STRATEGIC_PATCH:
        return strategic_merge(doc, patch, merge_keys or MERGE_KEYS)
    raise ApiUnsupported(kind)


class ApiUnsupported(Exception):
    """A patch type the server does not take (server-side apply): 415, as upstream answers."""


# --- RFC 6902 -----------------------------------------------------------------------------------------------
def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"json patch path {path!r} must start with /")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> tuple[Any, str]:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, list):
            node = node[_index(node, part, existing=True)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise bad_request(f"json patch: path /{'/'.join(parts)} does not exist")
    return node, parts[-1]


def _index(items: list[Any], part: str, existing: bool) -> int:
    if part == "-" and not existing:
        return len(items)
    if not part.isdigit() or int(part) > len(items) - (1 if existing else 0):
        raise bad_request(f"json patch: index {part!r} out of range")
    return int(part)


def _get(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return doc
    parent, key = _parent(doc, parts)
    if isinstance(parent, list):
        return parent[_index(parent, key, existing=True)]
    if not isinstance(parent, dict) or key not in parent:
        raise bad_request(f"json patch: path /{'/'.join(parts)} does not exist")
    return parent[key]


def _remove(doc: Any, parts: list[str]) -> Any:
    parent, key = _parent(doc, parts)
    if isinstance(parent, list):
        return parent.pop(_index(parent, key, existing=True))
    if not isinstance(parent, dict) or key not in parent:
        raise bad_request(f"json patch: cannot remove missing /{'/'.join(parts)}")
    return parent.pop(key)


def _add(doc: Any, parts: list[str], value: Any, replace: bool) -> Any:
    if not parts:
        return copy.deepcopy(value)
    parent, key = _parent(doc, parts)
    if isinstance(parent, list):
        index = _index(parent, key, existing=replace)
        if replace:
            parent[index] = copy.deepcopy(value)
        else:
            parent.insert(index, copy.deepcopy(value))
    elif isinstance(parent, dict):
        if replace and key not in parent:
            raise bad_request(f"json patch: cannot replace missing /{'/'.join(parts)}")
        parent[key] = copy.deepcopy(value)
    else:
        raise bad_request(f"json patch: /{'/'.join(parts)} has no container")
    return doc


def json_patch(doc: dict[str, Any], ops: list[Any]) -> dict[str, Any]:
    out: Any = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"json patch operation needs op and path, got {op!r}")
        parts = _pointer(op["path"])
        name = op["op"]
        if name in ("add", "replace"):
            if "value" not in op:
                raise bad_request(f"json patch {name} needs a value")
            out = _add(out, parts, op["value"], replace=name == "replace")
        elif name == "remove":
            _remove(out, parts)
        elif name == "test":
            if _get(out, parts) != op.get("value"):
                raise ApiConflict(f"json patch test failed at {op['path']}")
        elif name in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            value = _remove(out, source) if name == "move" else copy.deepcopy(_get(out, source))
            out = _add(out, parts, value, replace=False)
        else:
            raise bad_request(f"json patch: unknown op {name!r}")
    if not isinstance(out, dict):
        raise bad_request("json patch must leave an object")
    return out


class ApiConflict(Exception):
    """A json patch `test` that did not hold: nothing is applied."""


# --- RFC 7386 -----------------------------------------------------------------------------------------------
def merge_patch(doc: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


# --- strategic merge -----------------------------------------------------------------------------------------
def strategic_merge(doc: Any, patch: Any, keys: dict[str, str] = MERGE_KEYS) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key == "$retainKeys" or key == "$patch":
            continue  # ordering and key retention change nothing the twin stores
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            out[field] = [v for v in out.get(field, []) if v not in value]
            continue
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list) and key in keys:
            out[key] = _merge_list(out.get(key) or [], value, keys[key], keys)
        else:
            merged = strategic_merge(out.get(key), value, keys)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
    return out


def _merge_list(current: list[Any], patch: list[Any], key: str, keys: dict[str, str]) -> list[Any]:
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    out = copy.deepcopy(current)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise bad_request(f"strategic merge patch: list item without merge key {key!r}: {item!r}")
        at = next((i for i, have in enumerate(out) if isinstance(have, dict) and have.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if at is not None:
                out.pop(at)
            continue
        if at is None:
            out.append(strategic_merge({}, item, keys))
        else:
            out[at] = strategic_merge(out[at], item, keys)
    return out
