"""The concrete change of one background release, read from the live system when it is due.

Each kind changes something that leaves the service working, in the way real pipelines do:

* `image`: the same code released under the next version tag (the pipeline pushes it first);
* `rebuild`: a harmless commit (faults/benign_code.py: a docstring, a comment, a new helper
  nothing calls yet) built and released as a code change is, so it gets the same
  `<version>-<7 hex>` build tag and a real diff in `get_source`, with a commit subject naming
  what it does;
* `recreate`: the rollout strategy switched to Recreate (no pod replaced), later switched back
  together with the next version under RollingUpdate;
* `env`: a service address rewritten to an equivalent DNS name of the same Service
  (`cartservice` -> `cartservice.<ns>.svc.cluster.local`), which Kubernetes DNS resolves the
  same way (the A record `<service>.<ns>.svc.<zone>`, kubernetes/dns docs/specification.md
  §2.3.1, reached from the shorter names through the pod's search path `<ns>.svc.<zone>
  svc.<zone> <zone>`, generateSearchesForDNSClusterFirst in kubernetes/kubernetes
  pkg/kubelet/network/dns/dns.go);
* `resources`: a raised memory or CPU limit (undone later);
* `probes`: a probe's period or failure threshold tuned (undone later);
* `replicas`: one more replica (`kubectl scale`, no new revision; undone later).

A tag a scheduled fault deploys on the same service is never pushed, so the fault's pull still
fails; the tags themselves (`v0.10.7`, `v0.10.6-<hex>`) are the ones faults use. A commit is
shipped only when every code change the schedule still has for the service applies on top of it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_marathon.backends.base import Backend, BackendError
from pytest_marathon.faults import benign_code
from pytest_marathon.twin.images import split_image

CLUSTER_DNS = ("", ".{ns}", ".{ns}.svc", ".{ns}.svc.cluster.local")


@dataclass
class Change:
    """Release arguments (`Backend.release`) for the change and for its undo (temporary kinds);
    `push` is an image the pipeline publishes (same code) before releasing."""

    release: dict[str, Any] = field(default_factory=dict)
    undo: dict[str, Any] | None = None
    push: str | None = None
    subject: str | None = None
    replicas: int | None = None
    undo_replicas: int | None = None
    patch: str | None = None


def plan_change(kind: str, backend: Backend, target: str, rng: random.Random,
                reserved: frozenset[str], later_patches: Sequence[str] = ()) -> Change | None:
    """The change of a `kind` release of `target` now, or None when the service offers nothing of
    that kind (it then ships nothing). `reserved` holds images faults will deploy,
    `later_patches` the code changes the schedule will still deliver to `target`."""
    image = backend.artifact_value(f"image:{target}") or ""
    if kind in ("image", "rebuild") and not _buildable(backend, target):
        return None  # the running image is not in the registry (an agent rolled back onto it)
    if kind == "image":
        new = _next_version(image, rng, reserved)
        return Change(release={"image": new}, push=new)
    if kind == "recreate":
        # the flip alone replaces no pod (a strategy is no revision); the undo ships the next
        # version back under RollingUpdate, so neither half takes the service down
        before = backend.resources("deployments", target)[0]["spec"]["strategy"]
        if before.get("type") == "Recreate":
            return None
        return Change(release={"strategy": {"type": "Recreate"}}, undo={"strategy": before})
    if kind == "rebuild":
        commit = benign_code.plan(target, backend.source(target), rng, later_patches)
        if commit is None:
            return None
        diff, subject = commit
        return Change(patch=diff, subject=subject)
    if kind == "env":
        return _address_change(backend, target, rng)
    if kind == "resources":
        key = rng.choice(("memory", "cpu"))
        before = backend.artifact_value(f"limits:{target}/{key}")
        if before is None:
            return None
        after = _scaled(before, rng.choice((1.25, 1.5, 2.0)))
        return Change(release={"resources": {f"limits.{key}": after}},
                      undo={"resources": {f"limits.{key}": before}})
    if kind == "probes":
        return _probe_change(backend, target, rng)
    if kind == "replicas":
        before = int(backend.artifact_value(f"replicas:{target}") or 1)
        return Change(replicas=before + 1, undo_replicas=before)
    raise ValueError(f"unknown background release kind {kind!r}")


def _buildable(backend: Backend, target: str) -> bool:
    """Whether the running code of `target` can be rebuilt or re-tagged: a team's pipeline builds
    from the source of what runs, and an image the registry does not hold has none."""
    try:
        backend.source(target)
    except BackendError:
        return False
    return True


def _next_version(image: str, rng: random.Random, reserved: frozenset[str]) -> str:
    """The next release tag of `image`: usually the next patch version, sometimes the next minor
    one, skipping a tag a fault deploys on this service."""
    name, tag = split_image(image)
    core = tag.split("-", 1)[0].lstrip("v")
    try:
        major, minor, patch = (int(p) for p in core.split("."))
    except ValueError:
        major, minor, patch = 0, 0, 0
    if rng.random() < 0.15:
        minor, patch = minor + 1, 0
    else:
        patch += 1
    while f"{name}:v{major}.{minor}.{patch}" in reserved:
        patch += 1
    return f"{name}:v{major}.{minor}.{patch}"


def _address_change(backend: Backend, target: str, rng: random.Random) -> Change | None:
    """Rewrite one `*_ADDR` of `target` to another DNS name of the same Service and port."""
    services = {s["name"] for s in backend.topology()["services"]}
    namespace = backend.namespace
    options = []
    for edge in backend.topology()["edges"]:
        if edge["from"] != target or not isinstance(edge.get("address"), str):
            continue
        host, sep, port = edge["address"].rpartition(":")
        short = host
        for suffix in sorted((s.format(ns=namespace) for s in CLUSTER_DNS if s), key=len, reverse=True):
            if short.endswith(suffix):
                short = short[: -len(suffix)]
                break
        if not sep or short not in services:
            continue  # not a working address now: nothing equivalent to move it to
        forms = [f"{short}{s.format(ns=namespace)}:{port}" for s in CLUSTER_DNS]
        forms = [form for form in forms if form != edge["address"]]
        options.append((edge["via"], forms))
    if not options:
        return None
    var, forms = options[rng.randrange(len(options))]
    return Change(release={"env": {var: rng.choice(forms)}})


def _probe_change(backend: Backend, target: str, rng: random.Random) -> Change | None:
    kind = rng.choice(("readiness", "liveness"))
    raw = backend.artifact_value(f"probe:{target}/{kind}")
    if raw is None:
        return None
    probe = json.loads(raw)
    setting = rng.choice(("periodSeconds", "failureThreshold"))  # phrasing.NAMEABLE_PROBE_SETTINGS
    before = probe.get(setting, 10 if setting == "periodSeconds" else 3)
    choices = (5, 15, 20) if setting == "periodSeconds" else (4, 5, 6)
    after = rng.choice([c for c in choices if c != before])
    return Change(release={"probes": {kind: {setting: after}}},
                  undo={"probes": {kind: {setting: before}}})


def _scaled(quantity: str, factor: float) -> str:
    """A CPU (`200m`, `1`) or memory (`128Mi`, `1Gi`) quantity times `factor`, in the same unit."""
    for unit in ("Mi", "Gi", "Ki", "m"):
        if quantity.endswith(unit):
            number = float(quantity[: -len(unit)])
            return f"{int(round(number * factor))}{unit}"
    return f"{float(quantity) * factor:g}"
