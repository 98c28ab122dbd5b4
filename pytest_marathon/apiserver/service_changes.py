"""What a patched Service asks for: a new targetPort, the one Service field the twin changes.

AIOpsLab's `misconfig_k8s` fault (aiopslab/generators/fault/inject_virtual.py
inject_misconfig_k8s) rewrites a Service's `spec.ports[*].targetPort` from 9090 to 9999 and
patches it back to recover; an SRE repairs it with `kubectl patch`, `edit` or `apply`. Any other
difference (selector, port, type, clusterIP, labels) is a 422 naming the field, the Service left
as it was, as `changes.py` does for deployments.
"""

from __future__ import annotations

from typing import Any

from pytest_marathon.apiserver.changes import prune
from pytest_marathon.apiserver.status import ApiError, invalid

#: what `kubectl apply` writes on an object it did not create (kubectl pkg/cmd/apply): kept by
#: nobody in the twin, so a difference in it is not a change
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_SERVER_META = ("resourceVersion", "uid", "generation", "creationTimestamp", "managedFields", "selfLink")


def plan_service_change(name: str, current: dict[str, Any], desired: dict[str, Any]) -> dict[int, int]:
    """Port index -> new targetPort; {} when nothing changes. Raises ApiError (422) otherwise."""
    cur_spec, want_spec = dict(current["spec"]), dict(desired.get("spec") or {})
    cur_ports, want_ports = cur_spec.pop("ports", []), want_spec.pop("ports", [])
    if prune(cur_spec) != prune(want_spec):
        raise _refused(name, "spec", _first_difference(prune(cur_spec), prune(want_spec)))
    if len(cur_ports) != len(want_ports):
        raise _refused(name, "spec.ports", "the number of ports")
    wanted: dict[int, int] = {}
    for i, (have, want) in enumerate(zip(cur_ports, want_ports, strict=True)):
        have, want = dict(have), dict(want or {})
        old, new = have.pop("targetPort", None), want.pop("targetPort", None)
        if prune(have) != prune(want):
            raise _refused(name, f"spec.ports[{i}]", _first_difference(prune(have), prune(want)))
        if new != old:
            wanted[i] = _port_number(name, i, new)
    _check_meta(name, current, desired)
    return wanted


def _port_number(name: str, i: int, value: Any) -> int:
    field = f"spec.ports[{i}].targetPort"
    if isinstance(value, str) and not value.isdigit():
        # a named port resolves against the pods' container ports; the twin's pods name theirs
        # after the manifest and a Service naming one is not modelled
        raise _refused(name, field, "a named port (give the number)")
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = -1
    if isinstance(value, bool) or not 1 <= number <= 65535:
        # k8s.io/apimachinery pkg/util/validation IsValidPortNum's message, as
        # pkg/apis/core/validation validateServicePort reports it
        raise invalid("Service", name, field, f"Invalid value: {value!r}: must be between 1 and 65535, inclusive",
                      "FieldValueInvalid", group="")
    return number


def _check_meta(name: str, current: dict[str, Any], desired: dict[str, Any]) -> None:
    def meta(doc: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in (doc.get("metadata") or {}).items() if k not in _SERVER_META}
        annotations = {k: v for k, v in (out.get("annotations") or {}).items() if k != LAST_APPLIED}
        return prune({**out, "annotations": annotations})

    if meta(current) != meta(desired):
        raise _refused(name, "metadata", _first_difference(meta(current), meta(desired)))


def _first_difference(old: dict[str, Any], new: dict[str, Any]) -> str:
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return keys[0] if keys else ""


def _refused(name: str, where: str, what: str = "") -> ApiError:
    plain = what and " " not in what
    path = f"{where}.{what}" if plain else where
    detail = f" ({what})" if what and not plain else ""
    return invalid("Service", name, path, "Forbidden: this server changes a Service's ports' targetPort; "
                   f"nothing else{detail}", group="")
