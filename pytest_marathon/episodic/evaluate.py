"""Each task's evaluator: was the submission right? (AIOpsLab's problem `eval` methods.)

Detection compares "Yes"/"No" with whether a fault was injected (a no-operation problem wants
"No": a false positive fails). Localization is right when the faulty service is the first name
submitted (Acc@1; Acc@3 is reported too); listing every service earns Acc@3 at most on a short
list and nothing at 1. Analysis needs both the system level and the fault type.

Mitigation is stricter than AIOpsLab's: its evaluators check only that every pod is running and
ready (aiopslab/orchestrator/problems/*/`eval` of the Mitigation classes), which a flag fault never
breaks, so submitting at once would pass. Here the fault's effect must be gone as well: the flag
back at its healthy variant, the catalog entry's own symptom probe passing, or for a chaos
fault (HotelReservation's MongoDB problems, SocialNetwork's scale to zero) its check probe passing:
a search or a compose through the frontend answered again. Those two checks are
taken on the live system and recorded in the bundle's `probes` stream; the verdict is computed from
the bundle alone (`judge`), so a score can be recomputed by anyone holding it.
"""

from __future__ import annotations

from typing import Any

from pytest_marathon.episodic.problems import Problem


def judge(problem: Problem, solution: Any, checks: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """The verdict on a submission (None: none was made) given the recorded mitigation checks."""
    if problem.task == "mitigation":
        return _mitigation(checks)
    judge_task = {"detection": _detection, "localization": _localization, "analysis": _analysis}[problem.task]
    return judge_task(problem, solution)


def _detection(problem: Problem, solution: Any) -> tuple[bool, dict[str, Any]]:
    expected = "yes" if problem.expects_anomaly else "no"
    if not isinstance(solution, str):
        return False, {"Detection Accuracy": "Invalid Format"}
    right = solution.strip().lower() == expected
    return right, {"Detection Accuracy": "Correct" if right else "Incorrect"}


def _localization(problem: Problem, solution: Any) -> tuple[bool, dict[str, Any]]:
    if isinstance(solution, str):
        solution = [solution]
    if not isinstance(solution, list) or not all(isinstance(s, str) for s in solution) or not solution:
        return False, {"Acc@1": 0.0, "Acc@3": 0.0, "Invalid Format": True}
    names = [s.strip().lower() for s in solution]
    faulty = {f.lower() for f in problem.faulty}
    at1 = names[0] in faulty
    at3 = bool(faulty & set(names[:3]))
    return at1, {"Acc@1": 1.0 if at1 else 0.0, "Acc@3": 1.0 if at3 else 0.0}


def _analysis(problem: Problem, solution: Any) -> tuple[bool, dict[str, Any]]:
    if problem.analysis is None or not isinstance(solution, dict):
        return False, {"system_level_correct": False, "fault_type_correct": False}
    level, kind = problem.analysis
    level_ok = str(solution.get("system_level", "")).strip().lower() == level.lower()
    kind_ok = str(solution.get("fault_type", "")).strip().lower() == kind.lower()
    return level_ok and kind_ok, {"system_level_correct": level_ok, "fault_type_correct": kind_ok}


def _mitigation(checks: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    healthy = bool(checks.get("pods_healthy"))
    gone = bool(checks.get("fault_effect_gone"))
    return healthy and gone, {"pods_healthy": healthy, "unhealthy_pods": list(checks.get("unhealthy_pods", [])),
                              "fault_effect_gone": gone}


def pods_healthy(backend: Any) -> tuple[bool, list[str]]:
    """AIOpsLab's check: every pod's container running and ready, none crash-looping."""
    bad = []
    for pod in backend.resources("pods"):
        name = pod["metadata"]["name"]
        for status in pod.get("status", {}).get("containerStatuses", []):
            if not status.get("ready") or "running" not in status.get("state", {}):
                bad.append(name)
    return not bad, sorted(set(bad))


def command_names(backend: Any, deployment: str, program: str) -> bool:
    """AIOpsLab's WrongBinUsageMitigation: every container of the deployment has the program among
    its command's words (`"profile" in container.command`; `/go/bin/profile` is not that word)."""
    found = backend.resources("deployments", deployment)
    containers = found[0]["spec"]["template"]["spec"]["containers"] if found else []
    return bool(containers) and all(program in (c.get("command") or []) for c in containers)


def mitigation_checks(problem: Problem, backend: Any, entry: Any = None) -> dict[str, Any]:
    """The live checks a mitigation is judged by, taken once the repair had time to take hold."""
    healthy, bad = pods_healthy(backend)
    fault = problem.fault
    if fault is None:
        gone = True
    elif fault.kind == "flag":
        gone = backend.feature_flags().get(fault.name) == fault.healthy
    elif fault.kind in ("chaos", "k8s"):
        gone = fault.check is not None and bool(backend.probe(dict(fault.check)))
        if fault.command is not None:
            gone = gone and command_names(backend, *fault.command)
    else:
        gone = bool(backend.probe(dict(entry.probe))) if entry is not None else False
    return {"pods_healthy": healthy, "unhealthy_pods": bad, "fault_effect_gone": gone}
