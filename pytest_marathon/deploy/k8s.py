"""Small builders for the Kubernetes documents the renderer emits, and their YAML stream.

Shared by the application's manifests and the monitoring stack so both carry upstream's
security settings and the same `app: <name>` selection.
"""

from __future__ import annotations

from typing import Any

import yaml

#: release/kubernetes-manifests.yaml (v0.10.6): the same two blocks on every Deployment.
POD_SECURITY = {"fsGroup": 1000, "runAsGroup": 1000, "runAsNonRoot": True, "runAsUser": 1000}
CONTAINER_SECURITY = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "privileged": False,
    "readOnlyRootFilesystem": True,
}


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def secret(name: str, ns: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns},
            "type": "Opaque", "stringData": dict(sorted(data.items()))}


def deployment(name: str, ns: str, replicas: int, pod_spec: dict[str, Any]) -> dict[str, Any]:
    """An apps/v1 Deployment selecting its pods by `app: <name>`, as every upstream manifest does."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
        },
    }


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the collector configuration, the rule file) as literal blocks, so the
    shipped files stay readable inside their ConfigMaps; no anchors for shared sub-documents."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def to_yaml(docs: list[dict[str, Any]]) -> str:
    """A multi-document YAML stream, byte-identical for equal documents."""
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, explicit_start=True, width=120)
