"""An episode as a bundle: the same sealed, hashed, optionally signed format as a marathon's
(bundle/recorder.py), with the streams an episode has and a manifest that says so.

* `schedule` (held until sealing, the answer key): the problem — fault, faulty services, analysis.
* `tool_calls`: every ACI call, `reports`: the submission, `probes`: the mitigation checks taken
  on the live system, `sli`: the entry point's service level, `invocations`: one per step.

`score_episode(path)` recomputes the verdict from these records alone (episodic/evaluate.py
`judge`), so the score document next to the bundle is a function of the evidence.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pytest_marathon import RELEASE
from pytest_marathon.bundle import Recorder, read_bundle
from pytest_marathon.episodic.evaluate import judge
from pytest_marathon.episodic.problems import Fault, Problem

MODE = "episodic"


def open_recorder(directory: Path, problem: Problem, agent: str, seed: int, session_start: float,
                  sign_key: Any = None, isolation: str = "in-process") -> Recorder:
    manifest = {"release": RELEASE, "app": problem.app, "scenario": f"episode:{problem.pid}", "seed": seed,
                "agent": agent, "mode": MODE, "problem": problem.pid, "task": problem.task,
                "session_start": session_start, "isolation": isolation}
    return Recorder(directory, manifest, hold=("schedule",), sign_key=sign_key)


def problem_record(problem: Problem) -> dict[str, Any]:
    return {"fault_id": "f01", "problem": problem.pid, "task": problem.task, "app": problem.app,
            "fault": _fault_record(problem.fault) if problem.fault else None, "faulty": list(problem.faulty),
            "analysis": list(problem.analysis) if problem.analysis else None, "inject_at": 0.0}


def _fault_record(fault: Fault) -> dict[str, Any]:
    """The fault as recorded; a chaos fault's own fields only when set, so a flag or catalog
    problem's record is what it was before chaos faults existed."""
    record = asdict(fault)
    for key in ("steps", "check", "repairs", "command"):
        if not record[key]:
            del record[key]
    return record


def _problem_of(record: dict[str, Any]) -> Problem:
    fault = record["fault"]
    return Problem(pid=record["problem"], app=record["app"], task=record["task"],
                   fault=Fault(**fault) if fault else None, faulty=tuple(record["faulty"]),
                   analysis=tuple(record["analysis"]) if record["analysis"] else None)  # type: ignore[arg-type]


def score_episode(path: str | Path, verify_key: Any = None) -> dict[str, Any]:
    """The score document of a sealed episode bundle, from its records alone."""
    bundle = read_bundle(Path(path), verify_key=verify_key)
    if bundle.manifest.get("mode") != MODE:
        raise ValueError(f"{path} is not an episode bundle (mode {bundle.manifest.get('mode')!r})")
    schedule = bundle.stream("schedule")
    if len(schedule) != 1:
        raise ValueError(f"{path}: an episode bundle holds one problem record, found {len(schedule)}")
    problem = _problem_of(schedule[0])
    reports = bundle.stream("reports")
    submission = reports[-1] if reports else None
    checks = {p["check"]: p["value"] for p in bundle.stream("probes")}
    correct, details = judge(problem, submission["solution"] if submission else None, checks)
    calls = bundle.stream("tool_calls")
    invocations = bundle.stream("invocations")
    # an MCP episode's last record is the agent's process (its end and its usage after the last
    # tool call): counted in what the episode cost, not as a step
    steps = [s for s in invocations if s.get("kind") != "process"]
    start = float(bundle.manifest["session_start"])
    process = [s["status"] for s in invocations if s.get("kind") == "process"]
    return {
        **({"process": process[-1]} if process else {}),
        "problem": problem.pid, "task": problem.task, "app": problem.app, "agent": bundle.manifest["agent"],
        "seed": bundle.manifest["seed"], "correct": bool(correct and submission is not None),
        "details": details, "submitted": submission is not None,
        "solution": submission["solution"] if submission else None,
        "steps": len(steps), "ttx_s": (submission["t"] - start) if submission else None,
        "tool_calls": len(calls), "in_chars": sum(s["in_chars"] for s in steps),
        "out_chars": sum(s["out_chars"] for s in steps), "wall_s": round(sum(s["wall_s"] for s in invocations), 6),
        "model_calls": sum(int(s.get("model_calls", 0)) for s in invocations),
        "input_tokens": sum(int(s.get("input_tokens", 0)) for s in invocations),
        "output_tokens": sum(int(s.get("output_tokens", 0)) for s in invocations),
        "cost_usd": round(sum(float(s.get("cost_usd", 0.0)) for s in invocations), 6),
        "content_digest": bundle.content_digest, "isolation": bundle.manifest.get("isolation", "in-process"),
    }


def write_score(directory: Path, score: dict[str, Any]) -> Path:
    path = directory.parent / f"{directory.name}.score.json"
    path.write_text(json.dumps(score, indent=1, sort_keys=True) + "\n")
    return path
