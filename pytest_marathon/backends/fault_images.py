"""Code faults on a cluster: images built beforehand, found in the user's registry by name.

The catalog's code faults are patches to the twin's service code (Python written to the real
service's idiom). A cluster runs upstream's images, so a code fault there is an image of the
upstream service with the same defect ported to its language, which a person or a pipeline
builds. The contract is a name: the fault image of a patch to `<deployment>` is

    <registry>/<deployment>:fault-<first 12 hex digits of the SHA-256 of the patch text>

`pytest-marathon fault-images --app boutique --registry R` lists every such reference with its
entry, service, language and patch. Before a run the backend asks the registry (Docker Registry
HTTP API v2, `HEAD /v2/<name>/manifests/<tag>`, distribution `docs/spec/api.md`) which of them
exist; a scheduled code fault whose image is missing is dropped and named with the others a
backend cannot deliver (faults/backend_support.py), and a release of such a patch deploys the
image by that name. Registries that need credentials are not supported yet: the registry must
answer anonymous reads (a Kind cluster's local registry does).
"""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from typing import Any

from pytest_marathon.backends.base import BackendError

MANIFEST_TYPES = ", ".join((
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
))


def fault_tag(patch: str) -> str:
    return "fault-" + hashlib.sha256(patch.encode()).hexdigest()[:12]


def fault_image(registry: str, deployment: str, patch: str) -> str:
    return f"{registry.rstrip('/')}/{deployment}:{fault_tag(patch)}"


def _split(image: str) -> tuple[str, str, str]:
    """`host[:port]/name:tag` as (host, name, tag)."""
    host, _, rest = image.partition("/")
    name, _, tag = rest.rpartition(":")
    if not host or not name or not tag:
        raise BackendError(f"not an image reference with a registry host and a tag: {image!r}")
    return host, name, tag


def image_exists(image: str, *, scheme: str = "http", timeout: float = 30.0) -> bool:
    """Whether the registry holds the manifest (a 200 to HEAD; 404 is absent; anything else,
    or no answer, is an error naming the registry)."""
    host, name, tag = _split(image)
    request = urllib.request.Request(f"{scheme}://{host}/v2/{name}/manifests/{tag}", method="HEAD",
                                     headers={"Accept": MANIFEST_TYPES})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return bool(200 <= response.status < 300)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise BackendError(f"registry {host}: HTTP {exc.code} for {name}:{tag}") from None
    except OSError as exc:
        raise BackendError(f"registry {host} is unreachable: {exc}") from None


def listing(catalog: Any, registry: str, languages: dict[str, str]) -> list[dict[str, str]]:
    """Every code fault of the catalog with the image a cluster run needs for it."""
    return [{"entry": e.id, "deployment": e.target, "language": languages.get(e.target, ""),
             "image": fault_image(registry, e.target, e.patch), "patch": e.patch}
            for e in catalog if e.patch is not None]
