"""The words agents, the catalog and the scorer must share: fault categories and how an alert
names its workload.

One definition, imported by the tool descriptions, the catalog schema, the baselines and the
scorer, so an agent that reads alerts the documented way is graded by the same reading. It imports
nothing of the project, so every package (agents and the interface included) may depend on it
without reaching ground truth.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The seven fault categories of the paper (Ghosh et al.'s production mix), as spelled in the
#: catalog, the `report_incidents` schema and score output.
CATEGORIES: tuple[str, ...] = (
    "code",
    "dependency",
    "infrastructure",
    "deployment",
    "configuration",
    "database-network",
    "authentication",
)

#: Alert labels that name a workload directly, in the order they are read (docs/internals.md,
#: "Alert -> workload"); `pod` comes last, through its deployment. `container` names no workload:
#: every Online Boutique container is called `server`, as in the upstream manifests.
WORKLOAD_LABELS: tuple[str, ...] = ("deployment", "service", "service_name")


def workload_of_pod(pod: str) -> str | None:
    """`<deployment>-<template hash>-<suffix>` -> `<deployment>`; None when not pod-shaped."""
    parts = pod.split("-")
    if len(parts) < 3:
        return None
    return "-".join(parts[:-2])


def workload_of(labels: Mapping[str, Any]) -> str | None:
    """The workload an alert is about: the first present of deployment, service, service_name,
    then the pod's deployment."""
    for key in WORKLOAD_LABELS:
        value = labels.get(key)
        if value:
            return str(value)
    pod = labels.get("pod")
    return workload_of_pod(str(pod)) if pod else None
