"""A kubeconfig for the twin's API server: one cluster, one user, one context in the app's
namespace, so `kubectl --kubeconfig FILE get pods` needs no other flag (field names of
client-go tools/clientcmd/api/v1/types.go)."""

from __future__ import annotations

from pathlib import Path

import yaml

from pytest_marathon.apiserver.status import AGENT_USER

CONTEXT = "marathon-twin"


def kubeconfig(server_url: str, namespace: str, name: str = CONTEXT) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server_url}}],
        "users": [{"name": AGENT_USER, "user": {}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": AGENT_USER, "namespace": namespace}}],
        "current-context": name,
        "preferences": {},
    }


def write_kubeconfig(path: Path, server_url: str, namespace: str, name: str = CONTEXT) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(kubeconfig(server_url, namespace, name), sort_keys=False), encoding="utf-8")
    return path
