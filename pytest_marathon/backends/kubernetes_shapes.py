"""The documents a Kubernetes backend sends and reads: container patches, Chaos Mesh objects,
timestamps and `pods/log` lines, kept apart from the client calls that carry them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
CHANGE_CAUSE = "kubernetes.io/change-cause"
REVISION = "deployment.kubernetes.io/revision"
#: the twin's own description of a direct fault on its Chaos Mesh object (apiserver/operator.py)
_HANDLERS = ("grpc", "httpGet", "tcpSocket", "exec")


def virtual_time(stamp: str | None, epoch: datetime) -> float | None:
    """An RFC 3339 time as seconds since the backend's epoch (its t = 0)."""
    if not stamp:
        return None
    return round((datetime.fromisoformat(stamp.replace("Z", "+00:00")) - epoch).total_seconds(), 6)


def log_lines(text: str, epoch: datetime) -> Iterator[tuple[float, str]]:
    """`pods/log?timestamps=true` lines: an RFC 3339 time with nanoseconds, a space, the message
    (k8s.io/api core/v1 PodLogOptions.Timestamps)."""
    for line in text.splitlines():
        stamp, _, message = line.partition(" ")
        head, _, frac = stamp.rstrip("Z").partition(".")
        t = virtual_time(head + "Z", epoch)
        if t is None:
            continue
        yield round(t + (float("0." + frac) if frac else 0.0), 6), message


def container_patch(container: Mapping[str, Any], *, image: str | None = None,
                    env: Mapping[str, Any] | None = None, resources: Mapping[str, str] | None = None,
                    probes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A strategic-merge patch of one container (merge key `name`), as `kubectl set env|image|
    resources` and an apply of a changed manifest send it: a removed variable is a `$patch:
    delete` entry, a literal clears `valueFrom` and a Secret reference clears `value`."""
    patch: dict[str, Any] = {"name": container["name"]}
    if image is not None:
        patch["image"] = image
    if env:
        entries = []
        for var, value in env.items():
            if value is None:
                entries.append({"name": var, "$patch": "delete"})
            elif isinstance(value, Mapping):
                entries.append({"name": var, "valueFrom": dict(value), "value": None})
            else:
                entries.append({"name": var, "value": str(value), "valueFrom": None})
        patch["env"] = entries
    if resources:
        sections: dict[str, dict[str, str]] = {}
        for key, value in resources.items():
            section, _, res = key.rpartition(".")
            sections.setdefault(section or "limits", {})[res] = str(value)
        patch["resources"] = sections
    for kind, changes in (probes or {}).items():
        if changes is None:
            continue
        fields = {**probe_fields(container.get(f"{kind}Probe")), **dict(changes)}
        patch[f"{kind}Probe"] = {**{h: None for h in _HANDLERS}, **probe_document(fields)}
    return patch


def probe_fields(probe: Mapping[str, Any] | None) -> dict[str, Any]:
    """A Kubernetes probe as flat fields (type, port, path, headers, timings)."""
    if not probe:
        return {}
    out: dict[str, Any] = {}
    if probe.get("grpc"):
        out = {"type": "grpc", "port": probe["grpc"]["port"]}
    elif probe.get("httpGet"):
        get = probe["httpGet"]
        out = {"type": "http", "port": get["port"], "path": get.get("path", "/")}
        if get.get("httpHeaders"):
            out["httpHeaders"] = [dict(h) for h in get["httpHeaders"]]
    elif probe.get("tcpSocket"):
        out = {"type": "tcp", "port": probe["tcpSocket"]["port"]}
    for key in ("initialDelaySeconds", "periodSeconds", "failureThreshold"):
        if key in probe:
            out[key] = probe[key]
    return out


def probe_document(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Flat probe fields as a core/v1 Probe (one handler: grpc, httpGet or tcpSocket)."""
    out: dict[str, Any] = {}
    if fields.get("type") == "grpc":
        out["grpc"] = {"port": fields["port"]}
    elif fields.get("type") == "http":
        out["httpGet"] = {"path": fields.get("path", "/"), "port": fields["port"]}
        if fields.get("httpHeaders"):
            out["httpGet"]["httpHeaders"] = [dict(h) for h in fields["httpHeaders"]]
    else:
        out["tcpSocket"] = {"port": fields["port"]}
    for key in ("initialDelaySeconds", "periodSeconds", "failureThreshold"):
        if key in fields:
            out[key] = fields[key]
    return out


