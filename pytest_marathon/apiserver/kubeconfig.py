"""A kubeconfig for the twin's API server: one cluster, one user, one context in the app's
namespace, so `kubectl --kubeconfig FILE get pods` needs no other flag (field names of
client-go tools/clientcmd/api/v1/types.go)."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from pytest_marathon.apiserver.status import AGENT_USER

CONTEXT = "marathon-twin"


def kubeconfig(server_url: str, namespace: str, name: str = CONTEXT, token: str | None = None,
               user: str = AGENT_USER, ca_pem: bytes | None = None) -> dict[str, object]:
    """`token`: a bearer token the user presents (the operator's, apiserver/identity.py);
    `ca_pem`: the certificate of an HTTPS server (apiserver/tls.py)."""
    cluster: dict[str, str] = {"server": server_url}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token} if token else {}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user, "namespace": namespace}}],
        "current-context": name,
        "preferences": {},
    }


def write_kubeconfig(path: Path, server_url: str, namespace: str, name: str = CONTEXT, token: str | None = None,
                     user: str = AGENT_USER, ca_pem: bytes | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(kubeconfig(server_url, namespace, name, token, user, ca_pem), sort_keys=False)
    path.write_text(text, encoding="utf-8")
    if token:
        path.chmod(0o600)  # it carries a credential
    return path
