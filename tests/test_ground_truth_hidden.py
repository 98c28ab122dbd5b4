"""No agent can read the answers: the schedule is not on disk while the run is live, and the
agent's workspace is a private directory away from the output folder.

The snooping agent below is the attacker the issue describes: at every invocation it looks for a
bundle from its workspace (up to 4 parent directories, and one level below each) and in the
output folder itself (which an in-process agent could guess from its cwd; here it is simply
told), and counts the schedule lines of *this* run that it can read.
"""

from __future__ import annotations

import _thread
import json
import signal
import stat
from pathlib import Path
from typing import Any

import pytest
from pytest_marathon.agents import resolve_agent

from pytest_marathon.bundle import read_bundle
from pytest_marathon.bundle.format import DETERMINISTIC_STREAMS
from pytest_marathon.config import RunConfig
from pytest_marathon.faults import schedule_for
from pytest_marathon.runner import MarathonInterrupted, record_marathon, run_marathon

SCENARIO, SEED = "short-5", 2


class Snooper:
    """Wraps a real agent; before each of its invocations, hunts for this run's schedule."""

    description = "looks for the answer key before acting"

    def __init__(self, out_dir: Path, bundle: Path, inner: Any = None, interrupt_at: int = 0):
        self.name = getattr(inner, "name", "snooper")
        self.out_dir = out_dir
        self.bundle = bundle.resolve()
        self.inner = inner
        self.interrupt_at = interrupt_at
        self.leaked: list[tuple[int, str, int]] = []  # (invocation, file, schedule lines read)
        self.workspaces: list[Path] = []
        self.modes: list[int] = []

    def invoke(self, ctx):  # noqa: ANN001 - the protocol's context
        workspace = Path(ctx.workspace)
        self.workspaces.append(workspace)
        self.modes.append(stat.S_IMODE(workspace.stat().st_mode))
        places = [workspace, *list(workspace.parents)[:4], self.out_dir]
        for place in places:
            for pattern in (
                "schedule.jsonl", "*/schedule.jsonl", "*/*/schedule.jsonl",
                # the releases ground truth says which revisions are benign: held the same way
                "releases.jsonl", "*/releases.jsonl", "*/*/releases.jsonl",
            ):
                for found in _glob(place, pattern):
                    lines = _readable_lines(found)
                    if found.resolve().parent == self.bundle and lines:
                        self.leaked.append((ctx.n, str(found), lines))
        if ctx.n == self.interrupt_at:
            # Ctrl-C as a user gives it: to the main thread. An exception raised here, in the
            # agent's thread, would only be this invocation's crash.
            _thread.interrupt_main()
            return None
        return self.inner.invoke(ctx) if self.inner is not None else None


def _glob(place: Path, pattern: str) -> list[Path]:
    """What `pattern` finds under `place` until the search fails: folders under /tmp come and go
    while other runs work beside this one (a folder removed between listing its parent and
    scanning it raises FileNotFoundError from pathlib's glob), and an attacker shrugs that off.
    Letting it escape would crash this invocation and make the snooped run differ from the plain
    one for a reason that has nothing to do with snooping."""
    found: list[Path] = []
    try:
        for path in place.glob(pattern):
            found.append(path)
    except OSError:
        pass
    return found


def _readable_lines(path: Path) -> int:
    try:
        return sum(1 for line in path.read_text().splitlines() if line.strip())
    except OSError:
        return 0


def _stream(bundle: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (bundle / f"{name}.jsonl").read_text().splitlines()]


def _first_differences(one: Path, other: Path) -> str:
    """Where two bundles' deterministic content parts: the first differing record of each
    stream (wall-clock fields dropped, as the content digest drops them)."""
    lines = []
    for stream in DETERMINISTIC_STREAMS:
        mine, theirs = _stream(one, stream), _stream(other, stream)
        mine = [{k: v for k, v in r.items() if not k.startswith("wall")} for r in mine]
        theirs = [{k: v for k, v in r.items() if not k.startswith("wall")} for r in theirs]
        if mine == theirs:
            continue
        at = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), min(len(mine), len(theirs)))
        lines.append(f"{stream}: {len(mine)} vs {len(theirs)} records, first difference at {at}: "
                     f"{mine[at] if at < len(mine) else None!r} vs {theirs[at] if at < len(theirs) else None!r}")
    return "\n".join(lines) or "no stream differs"


def _config(out_dir: Path, agent: str = "runbook") -> RunConfig:
    return RunConfig(app="boutique", agent=agent, seed=SEED, scenario=SCENARIO, out_dir=out_dir)


def test_no_schedule_while_live_and_the_sealed_bundle_scores_as_before(tmp_path: Path) -> None:
    snooped = _config(tmp_path / "snooped")
    snooper = Snooper(snooped.out_dir, snooped.bundle_dir, inner=resolve_agent("runbook"))
    result = run_marathon(snooped, agent=snooper, baseline_cache=None)

    assert len(snooper.workspaces) > 1
    assert snooper.leaked == []
    # every snooped invocation ran the inner agent to the end (a crash would change the run)
    assert {record["status"] for record in _stream(result.bundle, "invocations")} == {"ok"}
    # sealed: the schedule stream holds exactly the faults injected, in injection order
    expected = schedule_for("boutique", SCENARIO, SEED).records()
    assert _stream(result.bundle, "schedule") == expected
    bundle = read_bundle(result.bundle)
    assert bundle.manifest["sealed"]
    assert bundle.manifest["files"]["schedule.jsonl"]["lines"] == len(expected)
    assert bundle.manifest["files"]["releases.jsonl"]["lines"] > 0  # written at sealing only

    # The same agent without the snooping wrapper: snooping changed nothing, and a plain run's
    # score and content digest (which covers the schedule) are what the snooped run has.
    plain = run_marathon(_config(tmp_path / "plain"), baseline_cache=None)
    assert read_bundle(plain.bundle).manifest["content_digest"] == bundle.manifest[
        "content_digest"
    ], _first_differences(result.bundle, plain.bundle)
    assert plain.metrics == result.metrics
    assert plain.faults == result.faults


def test_the_workspace_is_private_outside_the_output_folder_and_removed(tmp_path: Path) -> None:
    config = _config(tmp_path / "out", agent="noop")
    snooper = Snooper(config.out_dir, config.bundle_dir)
    record_marathon(config, agent=snooper)

    workspaces = set(snooper.workspaces)
    assert len(workspaces) == 1  # one per run, the same at every invocation
    workspace = workspaces.pop()
    out = config.out_dir.resolve()
    assert out not in workspace.resolve().parents
    assert str(out) not in str(workspace) and config.run_id not in str(workspace)
    assert set(snooper.modes) == {0o700}
    assert not workspace.exists()  # nothing of the run is left behind there
    assert not (config.out_dir / ".workspaces").exists()


def test_an_interrupted_run_keeps_the_schedule_injected_so_far(tmp_path: Path) -> None:
    config = _config(tmp_path / "out", agent="noop")
    snooper = Snooper(config.out_dir, config.bundle_dir, interrupt_at=3)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(MarathonInterrupted) as stopped:
            record_marathon(config, agent=snooper)
    finally:
        signal.signal(signal.SIGINT, previous)

    assert stopped.value.bundle == config.bundle_dir
    assert snooper.leaked == []
    bundle = read_bundle(config.bundle_dir, allow_incomplete=True)
    assert bundle.manifest["status"] == "incomplete"
    invocations = _stream(config.bundle_dir, "invocations")
    stopped_at = 2 * config.delta_s  # invocation 3, at t = 240 s
    assert [record["n"] for record in invocations] == [1, 2]
    expected = [
        record
        for record in schedule_for("boutique", SCENARIO, SEED).records()
        if record["inject_at"] <= stopped_at
    ]
    assert expected  # the run was stopped after at least one injection
    assert _stream(config.bundle_dir, "schedule") == expected
    assert bundle.manifest["files"]["schedule.jsonl"]["lines"] == len(expected)
    with pytest.raises(Exception, match="incomplete|did not finish|complete"):
        read_bundle(config.bundle_dir)
