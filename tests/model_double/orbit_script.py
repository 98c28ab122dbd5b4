"""A scripted model for Orbit: JSON decisions in its loop, function calls in its subagent.

Orbit sends each step as one Chat Completions request: the charter as the system message and a
JSON state document as the user message (`budget.step`, `state.open_incidents`, `state.agenda`,
`last_observations`, `tool_catalog`); a correction call adds the bad answer and a second user
message. `OrbitScript` answers, per invocation, for the first open incident with firing alerts
whose signal is a workload and that has no successful action of an earlier invocation (the
*target*):

1. a read: `get_rollout_history` of the target's workload;
2. a report: `report_incidents` with a root cause naming the workload (which diagnoses it);
3. a repair: `rollback_service` of the workload, when the catalog offers it (with `source_fix`
   on, a hand-off to the source-fix subagent instead);
4. `finish`: the target's task done, a `mitigated` claim with the same root cause, one lesson.

With no target it finishes at once. `malformed` makes step `malformed_step` of every invocation
(or only of `malformed_invocations`) answer with text that is not JSON; `"once"` answers the
correction properly, `"twice"` answers it with another invalid decision. `culprit` blames another
workload than the incident's own (a code fault seen from its caller). The subagent (a request
offering function tools) reads the source once and answers in prose without patching; with
`undo_revisions` it reads that release's diff and proposes, builds and submits its reverse.

Every answer is recorded in `answers` as (invocation, step, kind), so tests can line them up with
the double's exchanges.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .conversation import Conversation
from .script import Text, ToolCall, Turn, tool_answer

NOT_JSON = "I think we should roll back the frontend."
INVALID = '{"decision": "maybe", "why": "not sure"}'


def _target(doc: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """The first open incident on a workload with firing alerts, no successful action at an
    earlier invocation and an open agenda task, with that task's id."""
    n = doc["wake_up"]["invocation"]
    for incident in sorted(doc["state"]["open_incidents"], key=lambda i: i["incident_id"]):
        if not incident["signal"].startswith("workload:") or not incident["alerts_firing"]:
            continue
        if any(a.get("ok") and a.get("n") != n for a in incident.get("actions", [])):
            continue
        tasks = [t["task"] for t in doc["state"]["agenda"] if t["incident"] == incident["incident_id"]]
        if tasks:
            return incident, tasks[0]
    return None


def _root_cause(workload: str) -> dict[str, Any]:
    return {"culprits": [workload], "artifact": f"image:{workload}", "category": "deployment",
            "text": f"a recent release of {workload} broke it"}


def reverse_diff(diff: str) -> str:
    """The unified diff that undoes `diff`: headers and hunk ranges swapped, + and - lines too."""
    out = []
    lines = diff.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = line[4:], lines[i + 1][4:]
            out += [f"--- a/{new.split('/', 1)[1]}", f"+++ b/{old.split('/', 1)[1]}"]
            i += 2
            continue
        hunk = re.match(r"^@@ -(\S+) \+(\S+) @@(.*)$", line)
        if hunk:
            out.append(f"@@ -{hunk.group(2)} +{hunk.group(1)} @@{hunk.group(3)}")
        elif line.startswith("+"):
            out.append("-" + line[1:])
        elif line.startswith("-"):
            out.append("+" + line[1:])
        else:
            out.append(line)
        i += 1
    return "\n".join(out) + "\n"


@dataclass
class OrbitScript:
    malformed: str = ""  # "" | "once" | "twice"
    malformed_step: int = 1
    malformed_invocations: tuple[int, ...] = ()
    source_fix: bool = False
    culprit: str | None = None  # blame this workload instead of the incident's own
    undo_revisions: tuple[int, int] | None = None  # the subagent reverts this release's diff
    answers: list[tuple[int, int, str]] = field(default_factory=list)

    def __call__(self, conv: Conversation) -> Turn:
        if conv.tools:
            return self._subagent(conv)
        doc = json.loads(conv.user_texts[0])
        n, step = doc["wake_up"]["invocation"], doc["budget"]["step"]
        correcting = len(conv.user_texts) > 1
        if self._malformed_here(n, step):
            if not correcting:
                return self._answer(n, step, "malformed", Text(NOT_JSON))
            if self.malformed == "twice":
                return self._answer(n, step, "malformed", Text(INVALID))
        decision = self._decide(doc)
        return self._answer(n, step, decision["decision"], Text(json.dumps(decision)))

    def _malformed_here(self, n: int, step: int) -> bool:
        return bool(self.malformed) and step == self.malformed_step and (
            not self.malformed_invocations or n in self.malformed_invocations
        )

    def _answer(self, n: int, step: int, kind: str, turn: Turn) -> Turn:
        self.answers.append((n, step, kind))
        return turn

    def _decide(self, doc: dict[str, Any]) -> dict[str, Any]:
        found = _target(doc)
        if found is None:
            return {"decision": "finish", "agenda": [], "mapping": {}, "claims": [], "lessons": []}
        target, task = found
        workload = target["signal"].split(":", 1)[1]
        incident = target["incident_id"]
        n = doc["wake_up"]["invocation"]
        done = [o["tool"] for o in doc["last_observations"] if o["incident"] == incident]
        if target["diagnosed"]:
            done += ["get_rollout_history", "report_incidents"]
        done += [a["tool"] for a in target.get("actions", []) if a.get("n") == n]
        catalog = {entry["name"] for entry in doc["tool_catalog"]}

        def call(tool: str, arguments: dict[str, Any], effect: str) -> dict[str, Any]:
            return {"decision": "tool_call", "task": task, "incident": incident, "tool": tool,
                    "arguments": arguments, "expected_effect": effect, "check": f"{tool} answers ok"}

        if "get_rollout_history" not in done:
            return call("get_rollout_history", {"service": workload}, "see the latest release")
        culprit = self.culprit or workload
        if "report_incidents" not in done:
            report = {"incident_id": incident, "status": "open", "root_cause": _root_cause(culprit)}
            return call("report_incidents", {"incidents": [report]}, "the incident is diagnosed")
        repair = "source_fix" if self.source_fix else "rollback_service"
        if repair in catalog and repair not in done:
            if repair == "source_fix":
                return call("source_fix", {"service": culprit, "hypothesis": "the last release"}, "a patch")
            return call("rollback_service", {"service": workload}, "the previous revision runs again")
        return {
            "decision": "finish",
            "agenda": [{"task": task, "incident": incident, "goal": f"watch {workload}", "state": "done"}],
            "mapping": {},
            "claims": [{"incident": incident, "status": "mitigated", "root_cause": _root_cause(culprit)}],
            "lessons": [f"a rollback is the first repair to try on {workload}"],
        }

    def _subagent(self, conv: Conversation) -> Turn:
        """Without `undo_revisions`: read the file list and stop. With it: read that release's
        diff, propose its reverse, build, submit."""
        done = [c.name for c in conv.calls]
        if self.undo_revisions is None:
            if not done:
                self.answers.append((0, 0, "subagent-read"))
                return ToolCall("get_source", {})
            self.answers.append((0, 0, "subagent-stop"))
            return Text("The source shows no defect matching the diagnosis; no patch proposed.")
        if not done:
            before, after = self.undo_revisions
            return ToolCall("get_source", {"from_revision": before, "to_revision": after})
        last = conv.calls[-1]
        answer = tool_answer(last) or {}
        if last.name == "get_source":
            return ToolCall("propose_patch", {"diff": reverse_diff(str(answer.get("diff", "")))})
        if last.name == "propose_patch" and answer.get("ok") is not False:
            return ToolCall("build_service_image", {})
        if last.name == "build_service_image" and answer.get("image"):
            return ToolCall("submit_patch", {"image": answer["image"]})
        return Text(f"Stopped after {last.name}: {json.dumps(answer)[:300]}")
