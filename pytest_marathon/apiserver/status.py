"""The API server's error answers: `metav1.Status` documents, as a real API server writes them.

Shapes and reasons follow k8s.io/apimachinery pkg/api/errors/errors.go (NewNotFound,
NewForbidden, NewInvalid, NewBadRequest, NewMethodNotSupported): kubectl prints `message`
after "Error from server (<reason>):", so the text is what a user reads.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A request the server answers with a Status instead of an object; nothing changed."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}

    def status(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            doc["details"] = self.details
        return doc


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(404, "NotFound", f'{qualified} "{name}" not found',
                    {"name": name, "group": group, "kind": resource} if group else {"name": name, "kind": resource})


def forbidden(resource: str, name: str | None, verb: str, namespace: str | None, reason: str,
              group: str = "") -> ApiError:
    """RBAC's refusal: `<resource> "<name>" is forbidden: User "<u>" cannot <verb> resource ...`
    with the authorizer's reason appended (apiserver pkg/endpoints/handlers/responsewriters/
    errors.go forbiddenMessage; apimachinery errors.go NewForbidden)."""
    scope = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    why = f'User "{AGENT_USER}" cannot {verb} resource "{resource}" in API group "{group}"{scope}'
    if reason:
        why += f": {reason}"
    qualified = f"{resource.split('/')[0]}.{group}" if group else resource.split("/")[0]
    head = f'{qualified} "{name}" is forbidden' if name else f"{qualified} is forbidden"
    details: dict[str, Any] = {"kind": resource.split("/")[0]}
    if group:
        details["group"] = group
    if name:
        details["name"] = name
    return ApiError(403, "Forbidden", f"{head}: {why}", details)


def invalid(kind: str, name: str, field: str, message: str, cause: str = "FieldValueForbidden",
            group: str = "apps") -> ApiError:
    """A 422 naming the field, with the cause kubectl prints after `The <Kind> "<name>" is
    invalid:` (kubectl pkg/cmd/util/helpers.go checkErr, statusCausesToAggrError)."""
    qualified = f"{kind}.{group}" if group else kind  # the core group has no suffix
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {field}: {message}',
                    {"name": name, "group": group, "kind": kind,
                     "causes": [{"reason": cause, "message": message, "field": field}]})


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_supported(resource: str, verb: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", f"{verb} is not supported on resources of kind {resource!r}",
                    {"kind": resource})


#: The identity the kubeconfig gives its user; it appears in RBAC refusals as a real one would.
AGENT_USER = "marathon-agent"
