"""How recorded labels and diagnoses are read against ground truth.

Two questions recur in every metric: which workload an alert is about (docs/internals.md,
"Alert -> workload"), and whether a reported artifact names the fault's responsible artifact.
Both are answered here, once, so agents' baselines and the scorer can agree on the reading.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_marathon.vocabulary import WORKLOAD_LABELS, workload_of, workload_of_pod

__all__ = [
    "WORKLOAD_LABELS",
    "artifact_forms",
    "normalise_artifact",
    "normalise_culprits",
    "workload_of",
    "workload_of_pod",
]

#: Spellings of an artifact kind accepted for the canonical kind of the tool vocabulary
#: (`code:`, `image:`, `env:`, `limits:`, `replicas:`, `flag:`, `secret:`, `probe:`, `node:`,
#: `network:`, `pod:`).
KIND_ALIASES = {
    "source": "code",
    "src": "code",
    "file": "code",
    "environment": "env",
    "envvar": "env",
    "env_var": "env",
    "limit": "limits",
    "resources": "limits",
    "resource": "limits",
    "replica": "replicas",
    "scale": "replicas",
    "feature-flag": "flag",
    "feature_flag": "flag",
    "featureflag": "flag",
    "feature": "flag",
    "readiness": "probe",
    "liveness": "probe",
    "container-image": "image",
}
_RESOURCE_ALIASES = {"mem": "memory", "ram": "memory", "memory": "memory", "cpu": "cpu"}
#: Kinds whose remainder names Kubernetes or OTel objects, which are lower-case by rule.
_CASE_FREE_KINDS = {
    "image",
    "limits",
    "replicas",
    "flag",
    "secret",
    "probe",
    "node",
    "network",
    "pod",
}


def normalise_artifact(text: Any) -> str | None:
    """Canonical form of an artifact name, so that spelling variants compare equal.

    `Source: CartService/./src/cart.py` and `code:cartservice/src/cart.py` are the same
    artifact; kinds go through KIND_ALIASES, services are lower-cased, paths lose leading
    `./` and `/`, resources map `mem` to `memory`. Anything without a `kind:` prefix is only
    trimmed and lower-cased, and can still match through the fault's own alias list.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    text = text.strip()
    if ":" not in text:
        return text.lower()
    kind, _, rest = text.partition(":")
    kind = kind.strip().lower()
    kind = KIND_ALIASES.get(kind, kind)
    rest = rest.strip()
    if kind in ("code", "env", "limits", "probe"):
        service, slash, tail = rest.partition("/")
        tail = tail.strip()
        if kind == "code":
            while tail.startswith(("./", "/")):
                tail = tail[2:] if tail.startswith("./") else tail[1:]
        elif kind == "limits":
            tail = _RESOURCE_ALIASES.get(tail.lower(), tail.lower())
        elif kind == "probe":
            tail = tail.lower()
        rest = f"{service.strip().lower()}{slash}{tail}"
    elif kind in _CASE_FREE_KINDS:
        rest = rest.lower()
    return f"{kind}:{rest}"


def artifact_forms(artifact: Any, aliases: Iterable[Any] = ()) -> frozenset[str]:
    """Every normalised spelling that names a fault's responsible artifact."""
    forms = {normalise_artifact(artifact), *(normalise_artifact(a) for a in aliases)}
    forms.discard(None)
    return frozenset(f for f in forms if f is not None)


def normalise_culprits(culprits: Any) -> frozenset[str]:
    """A reported culprit list as a set of workload names (trimmed, lower-case)."""
    if isinstance(culprits, str):
        culprits = [culprits]
    if not isinstance(culprits, list | tuple):
        return frozenset()
    return frozenset(str(c).strip().lower() for c in culprits if str(c).strip())
