"""Ctrl-C and SIGTERM at any moment leave evidence that scores and a summary of what finished.

* The recorder: a record appended from another thread once closing has begun is dropped (or
  refused) and the manifest counts exactly the lines in the files; a signal landing anywhere in
  a tight append loop still leaves a bundle that reads (`--allow-incomplete`).
* Real sessions: an agent that interrupts its own run (SIGINT to its process, or SIGTERM to the
  xdist controller, as `kill` would) gives pytest's interrupted summary with the finished runs'
  leaderboard, the interrupted run named with its bundle, exit code 2 and no traceback.
* The fault-injection harness (`signal_faults.py`): real sessions, signals at random moments.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from signal_faults import handles

from pytest_marathon.bundle import BundleError, Recorder, read_bundle
from pytest_marathon.cli import main

pytest_plugins = ["pytester"]

HERE = Path(__file__).parent
MANIFEST = {"release": "test", "app": "boutique", "scenario": "short-5", "seed": 1, "agent": "x"}
BAD_OUTPUT = ("Traceback (most recent call last)", "INTERNALERROR", "PluggyTeardownRaisedWarning",
              "cannot send")


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines())


def _assert_counts_match(bundle: Path) -> None:
    manifest = json.loads((bundle / "manifest.json").read_text())
    for name, entry in manifest["files"].items():
        assert _lines(bundle / name) == entry["lines"], name
    read_bundle(bundle, allow_incomplete=True)


def test_a_tool_call_after_closing_is_dropped_and_the_counts_match(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "b", dict(MANIFEST), hold=("schedule",))
    stop = threading.Event()
    accepted: list[bool] = []

    def agent() -> None:  # an in-process agent's thread that outlives its run
        n = 0
        while not stop.is_set():
            n += 1
            accepted.append(recorder.try_append("tool_calls", {"t": 0.0, "seq": n, "tool": "x"}))

    thread = threading.Thread(target=agent)
    thread.start()
    for t in range(200):
        recorder.append("sli", {"t": float(t), "q": 1.0, "e": 0.0, "l": 0.1})
    recorder.close_incomplete("interrupted (SIGINT)")
    time.sleep(0.05)  # the agent keeps calling after the close
    stop.set()
    thread.join()
    assert True in accepted and accepted[-1] is False
    _assert_counts_match(tmp_path / "b")
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["files"]["tool_calls.jsonl"]["lines"] == accepted.count(True)
    with pytest.raises(BundleError, match="cannot append"):
        recorder.append("sli", {"t": 999.0, "q": 1.0, "e": 0.0, "l": 0.1})
    assert recorder.try_append("tool_calls", {"t": 1.0}) is False


RECORDING = """\
import sys, threading
from pytest_marathon.bundle import Recorder
from pytest_marathon.run.stopping import StopSignals, Terminated
manifest = {"release": "test", "app": "boutique", "scenario": "short-5", "seed": 1, "agent": "x"}
stops = StopSignals()
with stops:
    with stops.deferred():
        recorder = Recorder(sys.argv[1], manifest, hold=("schedule",))
    def agent():
        n = 0
        while True:
            n += 1
            recorder.try_append("tool_calls", {"t": 0.0, "seq": n, "args": {"x": "y" * 200}})
    threading.Thread(target=agent, daemon=True).start()
    print("ready", flush=True)
    try:
        t = 0
        while True:
            t += 1
            recorder.append("sli", {"t": float(t), "q": 1.0, "e": 0.0, "l": 0.1})
            recorder.append("schedule", {"t": float(t), "fault_id": str(t)})
    except (KeyboardInterrupt, Terminated) as exc:
        with stops.deferred(raise_pending=False):
            recorder.close_incomplete(type(exc).__name__)
"""


NESTED = """
import os, signal
from pytest_marathon.run.stopping import StopSignals
with StopSignals():  # the CLI's (or a pytest item's) around the runner's own
    runner = StopSignals()
    with runner:
        with runner.deferred(raise_pending=False):  # the recorder opening or closing the bundle
            os.kill(os.getpid(), signal.{name})
            for _ in range(100_000):
                pass
        print("held", signal.Signals(runner.pending).name)
"""


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_inside_the_runners_deferred_block_is_held_under_the_clis_handler(
    tmp_path: Path, name: str
) -> None:
    """The runner's `StopSignals` sits inside the CLI's (or a pytest item's): a signal while it
    writes or closes the bundle is held until the block ends, whichever of them caught it first;
    before, Ctrl-C went to the outer handler and was raised in the middle of closing."""
    script = tmp_path / "nested.py"
    script.write_text(NESTED.replace("{name}", name))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, f"held {name}"), done.stderr


def test_ten_signals_in_a_tight_append_loop_each_leave_a_bundle_that_reads(tmp_path: Path) -> None:
    """Signals land between any two bytecodes of `append` (the race of the 63-line file whose
    manifest said 62), while another thread appends: every bundle matches its manifest."""
    script = tmp_path / "record.py"
    script.write_text(RECORDING)
    rng = random.Random(14)
    for i in range(10):
        bundle = tmp_path / f"b{i}"
        process = subprocess.Popen([sys.executable, str(script), str(bundle)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        time.sleep(rng.uniform(0.05, 0.5))
        process.send_signal(signal.SIGINT if i % 2 else signal.SIGTERM)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        assert "Traceback" not in err
        _assert_counts_match(bundle)


def test_a_signal_after_the_summary_ends_the_session_with_interrupted(tmp_path: Path) -> None:
    """The summary is printed, the process is exiting (here: an atexit callback still runs):
    SIGTERM then exits 2, not killed by the signal and without a traceback."""
    (tmp_path / "conftest.py").write_text("import atexit, time\natexit.register(time.sleep, 5)\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--marathon-app=boutique", "--agent=runbook",
         "--marathon-scenario=short-5", "-k", "nothing", "-p", "no:randomly",
         "-p", "no:cacheprovider"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert process.stdout is not None
    output = ""
    while "deselected in" not in output:
        line = process.stdout.readline()
        assert line, output
        output += line
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    output += process.stdout.read()
    assert process.wait(timeout=60) == pytest.ExitCode.INTERRUPTED
    assert "Traceback" not in output


AGENT = """\
import os, signal
from pathlib import Path


class StopsSecondRun:
    '''Works like a quiet agent; the second run started stops the session at its 2nd call, as a
    user pressing Ctrl-C (or `kill` on pytest's process) would.'''

    name = "stops-second-run"
    description = "sends a signal during the second run"

    def __init__(self):
        self.calls = 0
        self.first = False

    def invoke(self, ctx):
        self.calls += 1
        if self.calls == 1:  # the first run to be invoked is the one that finishes
            try:
                os.close(os.open(Path(os.environ["STOP_MARKER"]), os.O_CREAT | os.O_EXCL))
                self.first = True
            except FileExistsError:
                pass
        ctx.tools.call("get_alerts")
        if not self.first and self.calls == 2:
            # a plug-in runs in a child of the runner (unsandboxed here, so it can see it):
            # the runner is its parent, and under xdist the controller is the runner's parent
            runner = os.getppid()
            target = _parent_of(runner) if os.environ.get("STOP_PARENT") else runner
            os.kill(target, getattr(signal, os.environ["STOP_SIGNAL"]))


def _parent_of(pid):
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
"""
GRID = ["--marathon-app=boutique", "--marathon-scenario=short-5", "--marathon-seed=1-2",
        "--agent=stopping_agent:StopsSecondRun", "-p", "no:cacheprovider", "-p", "no:randomly"]


def _session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, signame: str,
             *extra: str) -> pytest.RunResult:
    pytester.makepyfile(stopping_agent=AGENT)
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))
    monkeypatch.setenv("STOP_MARKER", str(pytester.path / "first-run"))
    monkeypatch.setenv("STOP_SIGNAL", signame)
    # the test agent plays the user pressing Ctrl-C, so it must reach the runner's process:
    # without bubblewrap (its own pid namespace would hide the runner, as it should)
    monkeypatch.setenv("MARATHON_SANDBOX", "off")
    if extra:
        monkeypatch.setenv("STOP_PARENT", "1")  # under xdist: the controller, as `kill` would
    return pytester.runpytest_subprocess(*GRID, *extra, timeout=900)


def _check_interrupted(result: pytest.RunResult, bundles: Path) -> None:
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    for bad in BAD_OUTPUT:
        assert bad not in output
    assert "Interrupted" in output
    assert "marathon: interrupted runs" in output
    stopped = [b for b in bundles.iterdir()
               if json.loads((b / "manifest.json").read_text())["status"] != "complete"]
    assert stopped
    for bundle in stopped:
        assert bundle.name in output
        assert main(["score", str(bundle), "--allow-incomplete", "--json"]) == 0


@pytest.mark.slow
def test_ctrl_c_in_a_session_keeps_the_finished_run_and_names_the_stopped_one(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _session(pytester, monkeypatch, "SIGINT")
    _check_interrupted(result, pytester.path / ".marathon" / "bundles")
    output = result.stdout.str()
    assert "marathon leaderboard" in output and "1 passed" in output and "1 failed" in output
    assert "StopsSecondRun-seed2-short-5 interrupted (SIGINT): its bundle was closed" in output


@pytest.mark.slow
def test_sigterm_to_the_xdist_controller_stops_like_ctrl_c(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _session(pytester, monkeypatch, "SIGTERM", "-n", "2")
    _check_interrupted(result, pytester.path / ".marathon" / "bundles")
    assert "interrupted (SIGTERM)" in result.stdout.str()


@pytest.mark.slow
def test_ten_random_signals_on_real_sessions(tmp_path: Path) -> None:
    """The acceptance harness, small: ten signals, seeded, over pytest, `-n 2` and the CLI."""
    sys.path.insert(0, str(HERE))
    try:
        import signal_faults
    finally:
        sys.path.remove(str(HERE))
    noop = signal_faults.warm_cache(sys.executable, tmp_path)
    failures = []
    for trial in signal_faults.plan(10, seed=3):
        done = signal_faults.run_trial(trial, sys.executable, noop)
        if done.problems:
            failures.append(textwrap.shorten(str(done), 500))
    assert not failures


ENTRY_POINTS = {"module": [sys.executable, "-m", "pytest_marathon"],
                "script": [str(Path(sys.executable).with_name("pytest-marathon"))]}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize(("signame", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_while_the_command_starts_is_held_and_ends_it_quietly(
    tmp_path: Path, signame: str, code: int, entry: str
) -> None:
    """`python -m pytest_marathon run` catches SIGTERM from its first line, the `pytest-marathon`
    script once its command line is being read; a signal sent then, while it imports and parses
    its arguments, ends it with the shell's code and one line, never a traceback from inside an
    import, a kill, or a run that goes on as if nothing came."""
    process = subprocess.Popen(
        [*ENTRY_POINTS[entry], "run", "--app", "boutique", "--agent", "runbook",
         "--scenario", "short-5", "--seed", "1", "--out", str(tmp_path / "out")],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: (signal.signal(signal.SIGINT, signal.SIG_DFL),
                            signal.signal(signal.SIGTERM, signal.SIG_DFL)),
    )
    deadline = time.monotonic() + 30
    while not handles(process.pid, signal.SIGTERM):
        assert time.monotonic() < deadline, "the command never reached its first line"
        time.sleep(0.002)
    process.send_signal(getattr(signal, signame))
    out, err = process.communicate(timeout=120)
    assert process.returncode == code, (out, err)
    assert err.strip().splitlines() == [f"pytest-marathon: interrupted ({signame}) while starting"]
    assert not (tmp_path / "out").exists()
