"""Which backends can deliver a catalog entry, derived from how it is delivered.

Entries do not list backends in their YAML: what a backend needs follows from the mechanism.
A change-driven entry with a code `patch`, or one that releases an image tag of its own, needs an
image registry that takes the built image (the twin has one; a cluster needs
`--marathon-registry`). A direct entry needs its chaos kind: Chaos Mesh (installed on the
cluster: its API group is served) has objects for pod kills, network delay, loss and partitions
and CPU or memory stress; a datastore outage, a Redis maxmemory change, a node failure or a
credential rotation only the twin carries out. Every other
change (env, resources, probes, strategy) is a plain deployment patch any cluster takes.

What the orchestrator and the scorer watch counts too: an entry whose symptom probe is a
synthetic `request` or `rpc` with its signature needs the twin's probe path; a cluster answers
`deployment_ready` and `no_error_logs` probes from its API (backends/kubernetes_probes.py).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from pytest_marathon.faults.catalog import CatalogEntry

#: direct fault kinds a Chaos Mesh object carries (backends/kubernetes_chaos.py)
CHAOS_MESH_KINDS = frozenset({"pod_kill", "network_delay", "network_loss", "partition", "cpu_hog", "memory_hog"})
#: what a backend may offer: an image registry, the twin's own chaos kinds
REGISTRY, TWIN_CHAOS = "image registry (--marathon-registry)", "the twin's chaos kinds"
CHAOS_MESH = "Chaos Mesh (the chaos-mesh.org API group)"
SYMPTOM_PROBES = "synthetic requests for its symptom probe"
EVERYTHING = frozenset({REGISTRY, TWIN_CHAOS, CHAOS_MESH, SYMPTOM_PROBES})
#: probe kinds a Kubernetes API alone answers (backends/kubernetes_probes.py)
API_PROBE_KINDS = frozenset({"deployment_ready", "no_error_logs"})


def chaos_kinds(entry: CatalogEntry) -> set[str]:
    return {str(step.get("provider", {}).get("arguments", {}).get("kind"))
            for step in (entry.experiment or {}).get("method", [])}


def needs(entry: CatalogEntry) -> frozenset[str]:
    """What a backend must offer to deliver `entry`."""
    out = set()
    if entry.mechanism == "direct":
        out.add(TWIN_CHAOS if chaos_kinds(entry) - CHAOS_MESH_KINDS else CHAOS_MESH)
    elif entry.patch is not None or entry.image is not None:
        out.add(REGISTRY)
    if entry.probe.get("kind") not in API_PROBE_KINDS:
        out.add(SYMPTOM_PROBES)
    return frozenset(out)


def supported(entry: CatalogEntry, offers: Iterable[str]) -> bool:
    return needs(entry) <= set(offers)


def drop_unsupported(schedule: Any, backend: Any) -> Any:
    """The schedule without the faults `backend` cannot deliver (its `offers`; a backend without
    the attribute, such as the twin, offers everything; and, where the backend has it,
    `missing(entry)`: what else it lacks for that entry, such as a fault image), reported once as
    a warning."""
    offers = getattr(backend, "offers", EVERYTHING)
    missing = getattr(backend, "missing", None)
    lacks: dict[str, list[str]] = {}
    for fault in schedule.faults:
        if fault.entry.id not in lacks:
            found = sorted(needs(fault.entry) - set(offers))
            if not found and missing is not None:
                found = list(missing(fault.entry))
            lacks[fault.entry.id] = found
    kept = tuple(f for f in schedule.faults if not lacks[f.entry.id])
    if len(kept) == len(schedule.faults):
        return schedule
    skipped = sorted({f"{f.entry.id} (needs {', '.join(lacks[f.entry.id])})"
                      for f in schedule.faults if f not in kept})
    warnings.warn(f"{len(schedule.faults) - len(kept)} scheduled fault(s) skipped on this backend: "
                  + "; ".join(skipped), stacklevel=2)
    return replace(schedule, faults=kept)
