"""The runner's invocation protocol on the twin: budget, crash, world paused, ground truth."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from pytest_marathon.config import RunConfig
from pytest_marathon.run.invoke import InvocationExpired
from pytest_marathon.runner import record_marathon


class Unruly:
    """Overruns its budget on invocation 1 (then tries a tool), crashes on 2, behaves after."""

    name = "unruly"
    description = "misbehaves on purpose"

    def __init__(self) -> None:
        self.late_call: BaseException | None = None
        self.release = threading.Event()
        self.late_done = threading.Event()
        self.clock: list[float] = []

    def invoke(self, ctx):  # noqa: ANN001 - the protocol's context
        self.clock.append(ctx.t)
        if ctx.n == 1:
            self.release.wait(5)
            try:
                ctx.tools.call("get_alerts")
            except InvocationExpired as exc:
                self.late_call = exc
            self.late_done.set()
            return None
        if ctx.n == 2:
            self.release.set()
            self.late_done.wait(5)
            raise RuntimeError("agent bug")
        ctx.tools.call("get_alerts")
        return None


class Peeker:
    name = "peeker"
    description = "records what ground truth it is handed"
    needs_ground_truth = True

    def __init__(self) -> None:
        self.seen: list[int] = []

    def invoke(self, ctx):  # noqa: ANN001
        self.seen.append(len(ctx.ground_truth or ()))


def _stream(bundle: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (bundle / f"{name}.jsonl").read_text().splitlines()]


def test_timeout_and_crash_end_only_their_invocation(tmp_path: Path) -> None:
    agent = Unruly()
    config = RunConfig(app="boutique", agent="unruly", seed=1, scenario="short-5",
                       out_dir=tmp_path, budget_s=0.3)
    bundle = record_marathon(config, agent=agent)
    invocations = _stream(bundle, "invocations")
    statuses = [record["status"] for record in invocations]
    assert statuses[:2] == ["timeout", "crash"]
    assert set(statuses[2:]) == {"ok"}
    assert invocations[1]["detail"].startswith("agent 'unruly' raised RuntimeError at ")
    assert invocations[1]["detail"].endswith(": agent bug")
    assert isinstance(agent.late_call, InvocationExpired)
    assert [record["n"] for record in invocations] == list(range(1, len(invocations) + 1))
    assert agent.clock == [record["t"] for record in invocations]
    assert all(t % config.delta_s == 0 for t in agent.clock)
    calls = _stream(bundle, "tool_calls")
    assert {call["invocation"] for call in calls} == set(range(3, len(invocations) + 1))
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["sealed"] and manifest["status"] == "complete"


def test_only_a_ground_truth_agent_gets_the_schedule_so_far(tmp_path: Path) -> None:
    peeker = Peeker()
    config = RunConfig(app="boutique", agent="peeker", seed=2, scenario="short-5",
                       out_dir=tmp_path)
    bundle = record_marathon(config, agent=peeker)
    schedule = _stream(bundle, "schedule")
    invocations = _stream(bundle, "invocations")
    expected = [sum(1 for f in schedule if f["inject_at"] <= r["t"]) for r in invocations]
    assert peeker.seen == expected
    assert peeker.seen[-1] == 5
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["agent_flags"] == {"ground_truth": True}
