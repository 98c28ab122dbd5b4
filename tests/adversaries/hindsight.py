"""Exploit class 3: hindsight. Reports filed, or relabelled, long after the fault was reverted."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pytest_marathon.agents.labels import alert_id_of, alert_sort_key, workload_of
from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage, ToolClient
from pytest_marathon.agents.workspace import load_state, save_state

from .common import call_tool, container, deployment, file_incidents, rollout_history, workload_list
from .enumeration import CATEGORY_OF_KIND, PROBES

STATE = "hindsight.json"
#: Alerts of one workload first fired in the same window of this length form one incident: fine
#: enough that overlapping faults mostly land in different incidents.
WINDOW_S = 240.0
LOOKBACK_S = 900.0  # how far before an incident's first alert a change may have caused it
SLACK_S = 120.0  # a change is seen up to one invocation after it happened


def fingerprint(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a Deployment whose change can cause a fault, in comparable form."""
    spec = container(obj)
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return {
        "revision": annotations.get("deployment.kubernetes.io/revision"),
        "replicas": (obj.get("spec") or {}).get("replicas"),
        "image": spec.get("image"),
        "env": {v["name"]: json.dumps(v, sort_keys=True) for v in spec.get("env") or ()},
        "limits": (spec.get("resources") or {}).get("limits") or {},
        "probes": {kind: json.dumps(spec.get(key), sort_keys=True) for key, kind in PROBES.items()},
    }


def _template(print_: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in print_.items() if k != "revision"}


def changed_artifacts(w: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What a template change touched, as artifacts (the image's file is found at filing)."""
    found = [f"image:{w}"] if old["image"] != new["image"] else []
    for field, kind in (("env", "env"), ("limits", "limits"), ("probes", "probe")):
        keys = set(old[field]) | set(new[field])
        found += [f"{kind}:{w}/{k}" for k in sorted(keys) if old[field].get(k) != new[field].get(k)]
    if (new["replicas"] or 0) < (old["replicas"] or 0):
        found.append(f"replicas:{w}")
    return found


class HindsightRelabel:
    """Watches every deployment at every invocation and groups alerts per workload and time
    window, but diagnoses nothing until `file_at` (the last invocation): then it files, or with
    `relabel=True` relabels the diagnosis-free incidents it filed all along, blaming for each
    incident the latest template change seen before it, timed and named with hindsight (rollout
    history, the code diff between revisions).

    Steals Located (and, filed late, Correlated): a scorer that reads the final incident state
    credits diagnoses made long after the fault was reverted; judging each fault on the
    incident state at its evidence horizon gives them nothing.
    """

    name = "hindsight-relabel"
    description = "Attacker: files or relabels incidents at the last invocation using the rollout history (steals Located late)"
    needs_ground_truth = False

    def __init__(self, file_at: float = 0.0, relabel: bool = False) -> None:
        self.file_at = file_at
        self.relabel = relabel
        if relabel:
            self.name = "hindsight-relabel-early"

    def invoke(self, ctx: InvocationContext) -> InvocationUsage | None:
        state = load_state(
            ctx.workspace, STATE, {"seen": {}, "first": {}, "changes": [], "groups": [], "assigned": {}}
        )
        workloads = workload_list(ctx.tools)
        self._watch(ctx, state, workloads)
        touched = self._group(ctx, state, set(workloads))
        if ctx.t >= self.file_at:
            self._refine(ctx.tools, state)
            file_incidents(ctx.tools, [self._entry(g, self._blame(state, g)) for g in state["groups"]])
        elif self.relabel:  # alerts grouped in time, with no diagnosis yet
            file_incidents(ctx.tools, [self._entry(g, None) for g in state["groups"] if g["id"] in touched])
        save_state(ctx.workspace, STATE, state)
        return None

    @staticmethod
    def _watch(ctx: InvocationContext, state: dict[str, Any], workloads: list[str]) -> None:
        for w in workloads:
            now = fingerprint(deployment(ctx.tools, w))
            old = state["seen"].get(w)
            state["seen"][w] = now
            state["first"].setdefault(w, now)
            if old is None or _template(now) == _template(state["first"][w]):
                continue  # first look, or back to how it started (a revert is no cause)
            artifacts = changed_artifacts(w, old, now)
            if artifacts:
                state["changes"].append(
                    {"t": ctx.t, "workload": w, "artifacts": artifacts, "revisions": [old["revision"], now["revision"]]}
                )

    @staticmethod
    def _group(ctx: InvocationContext, state: dict[str, Any], workloads: set[str]) -> set[str]:
        touched: set[str] = set()
        for alert in sorted(ctx.alerts, key=alert_sort_key):
            alert_id, w = alert_id_of(alert), workload_of(alert.get("labels") or {})
            if alert_id in state["assigned"] or w not in workloads:
                continue
            fired = float(alert.get("fired_at") or ctx.t)
            window = int(fired // WINDOW_S)
            same = [g for g in state["groups"] if (g["workload"], g["window"]) == (w, window)]
            if same:
                group = same[0]
            else:
                group = {"id": f"hs-{len(state['groups']) + 1:04d}", "workload": w, "window": window, "alert_ids": [], "first": fired}
                state["groups"].append(group)
            group["alert_ids"].append(alert_id)
            state["assigned"][alert_id] = group["id"]
            touched.add(group["id"])
        return touched

    @staticmethod
    def _refine(tools: ToolClient, state: dict[str, Any]) -> None:
        """Hindsight: the rollout history dates each change exactly, and the diff between its
        revisions names the source file an image change brought."""
        history = {w: rollout_history(tools, w) for w in {c["workload"] for c in state["changes"]}}
        for change in state["changes"]:
            if change.get("refined"):
                continue
            change["refined"] = True
            w, (old, new) = change["workload"], change["revisions"]
            created = [r.get("created_at") or 0 for r in history[w] if str(r.get("revision")) == str(new)]
            if created and created[0] > 0:
                change["t"] = float(created[0])
            if f"image:{w}" in change["artifacts"] and old and new:
                diff = call_tool(tools, "get_source", service=w, from_revision=int(old), to_revision=int(new))
                paths = [
                    line[len("+++ b/") :].strip()
                    for line in str(diff.result.get("diff") or "").splitlines()
                    if line.startswith("+++ b/") and "test" not in line
                ]
                change["artifacts"] = [f"code:{w}/{p}" for p in paths] + change["artifacts"]

    @staticmethod
    def _blame(state: dict[str, Any], group: Mapping[str, Any]) -> tuple[str, str]:
        """The latest change before the incident's first alert, else its workload's own pods."""
        candidates = [
            c
            for c in state["changes"]
            if group["first"] - LOOKBACK_S <= c["t"] <= group["first"] + SLACK_S
        ]
        if not candidates:
            return group["workload"], f"pod:{group['workload']}"
        latest = max(candidates, key=lambda c: c["t"])
        return latest["workload"], latest["artifacts"][0]

    @staticmethod
    def _entry(group: Mapping[str, Any], blame: tuple[str, str] | None) -> dict[str, Any]:
        entry: dict[str, Any] = {"incident_id": group["id"], "alert_ids": list(group["alert_ids"]), "status": "open"}
        if blame is not None:
            culprit, artifact = blame
            entry["root_cause"] = {
                "culprits": [culprit],
                "artifact": artifact,
                "category": CATEGORY_OF_KIND[artifact.partition(":")[0]],
                "text": "in hindsight: the latest change before these alerts",
            }
        return entry
