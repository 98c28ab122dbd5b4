"""Exploit class 2: many incidents with different diagnosis guesses, so the matcher picks the one
that happens to be right."""

from __future__ import annotations

from typing import Any

from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage, ToolClient
from pytest_marathon.agents.workspace import load_state, save_state

from .common import (
    call_tool,
    container,
    deployment,
    due,
    feature_flags,
    file_incidents,
    workload_list,
)

#: A plausible category per artifact kind (the category is never graded; the form wants one).
CATEGORY_OF_KIND = {
    "code": "code",
    "image": "deployment",
    "env": "configuration",
    "limits": "infrastructure",
    "replicas": "infrastructure",
    "flag": "configuration",
    "secret": "authentication",
    "probe": "configuration",
    "node": "infrastructure",
    "network": "database-network",
    "pod": "dependency",
}
PROBES = {"livenessProbe": "liveness", "readinessProbe": "readiness", "startupProbe": "startup"}


def guesses(tools: ToolClient) -> list[tuple[str, str]]:
    """Every (culprit workload, artifact) pair the tools reveal, in a fixed order: each
    workload's image, pods, replicas, network path, limits, probes, env variables, secrets it
    references and source files, plus every feature flag and node blamed on each workload."""
    flags = sorted(feature_flags(tools))
    nodes_read = call_tool(tools, "get_resources", kind="nodes", limit=100)
    nodes = sorted(str(n["name"]) for n in nodes_read.result.get("items") or () if n.get("name"))
    pairs: list[tuple[str, str]] = []
    for w in workload_list(tools):
        spec = container(deployment(tools, w))
        artifacts = [f"image:{w}", f"pod:{w}", f"replicas:{w}", f"network:{w}"]
        artifacts += [f"limits:{w}/{r}" for r in ("cpu", "memory")]
        artifacts += [f"probe:{w}/{kind}" for key, kind in PROBES.items() if key in spec]
        for var in spec.get("env") or ():
            artifacts.append(f"env:{w}/{var['name']}")
            secret = ((var.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name")
            if secret:
                artifacts.append(f"secret:{secret}")
        files = call_tool(tools, "get_source", service=w).result.get("files") or ()
        artifacts += [f"code:{w}/{f['path']}" for f in files if isinstance(f, dict)]
        artifacts += [f"flag:{name}" for name in flags] + [f"node:{name}" for name in nodes]
        pairs += [(w, a) for a in dict.fromkeys(artifacts)]
    return pairs


def guess_incidents(tools: ToolClient, alert_ids: list[str], copies: int, prefix: str) -> list[dict[str, Any]]:
    """`copies` incidents per guess, each holding every alert (two faults may share a guess)."""
    return [
        {
            "incident_id": f"{prefix}-{n:04d}-{k}",
            "alert_ids": alert_ids,
            "status": "open",
            "root_cause": {
                "culprits": [culprit],
                "artifact": artifact,
                "category": CATEGORY_OF_KIND[artifact.partition(":")[0]],
                "text": "enumerated guess",
            },
        }
        for n, (culprit, artifact) in enumerate(guesses(tools), start=1)
        for k in range(1, copies + 1)
    ]


class GuessEnumeration:
    """One incident per (workload, artifact) guess the tools reveal, `copies` of each, every one
    holding every alert, filed from `file_at` on (the issue's: ~700 at the last invocation;
    three copies of the ~210 guesses the boutique reveals).

    Steals Located (and Correlated): a matching that prefers located edges picks, for each fault,
    the one guess that names its culprit and artifact, so enumeration buys diagnoses nobody made.
    A matching that never looks at diagnoses, with alerts partitioned, leaves one incident.
    """

    name = "guess-enumeration"
    description = "Attacker: one incident per enumerated culprit/artifact guess, each with every alert (steals Located)"
    needs_ground_truth = False

    def __init__(self, copies: int = 3, file_at: float = 0.0) -> None:
        self.copies = copies
        self.file_at = file_at

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None:
        state = load_state(ctx.workspace, "enumeration.json", {})
        ids = due(ctx, self.file_at, state)
        if ids is not None:
            file_incidents(ctx.tools, guess_incidents(ctx.tools, ids, self.copies, "guess"))
            save_state(ctx.workspace, "enumeration.json", state)
        return None
