"""The recorder writes bundles the reader can prove untouched, and interruptions stay readable."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_marathon.bundle import STREAMS, BundleError, Recorder, read_bundle

MANIFEST = {
    "release": "pytest-marathon test",
    "app": "boutique",
    "scenario": "short-5",
    "seed": 7,
    "agent": "noop",
    "agent_flags": {},
    "config": {"delta": 120},
    "backend": "twin",
}


def _record_sample(directory: Path, wall: float = 1.0, tokens: int = 10) -> Recorder:
    recorder = Recorder(directory, MANIFEST)
    recorder.append("schedule", {"fault_id": "f01", "inject_at": 0.0, "revert_at": 300.0})
    recorder.append("sli", {"t": 0.0, "q": 10.0, "e": 0.0, "l": 0.0})
    recorder.append("sli", {"t": 5.0, "q": 10.0, "e": 0.5, "l": 0.0})
    recorder.append(
        "tool_calls",
        {
            "t": 120.0,
            "invocation": 1,
            "seq": 1,
            "tool": "get_alerts",
            "kind": "read",
            "verdict": "ok",
            "wall_ms": wall,
        },
    )
    recorder.append("invocations", {"n": 1, "t": 120.0, "wall_s": wall, "input_tokens": tokens})
    return recorder


def test_sealed_bundle_round_trips_and_is_read_only(tmp_path):
    recorder = _record_sample(tmp_path / "run")
    digest = recorder.seal()
    bundle = read_bundle(tmp_path / "run")
    assert bundle.complete and bundle.sealed
    assert bundle.manifest["schema_version"] == 1
    assert bundle.manifest["app"] == "boutique" and bundle.manifest["seed"] == 7
    assert bundle.content_digest == digest == bundle.recompute_content_digest()
    assert [r["t"] for r in bundle.stream("sli")] == [0.0, 5.0]
    assert bundle.stream("alerts") == []
    for name in [*(f"{s}.jsonl" for s in STREAMS), "manifest.json"]:
        mode = (tmp_path / "run" / name).stat().st_mode
        assert not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH), name


def test_records_reach_disk_as_they_are_appended(tmp_path):
    recorder = Recorder(tmp_path / "run", MANIFEST)
    recorder.append("alerts", {"t": 15.0, "event": "firing", "alert_id": "a1"})
    line = (tmp_path / "run" / "alerts.jsonl").read_text()
    assert json.loads(line) == {"t": 15.0, "event": "firing", "alert_id": "a1"}
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["status"] == "running"


def test_content_digest_ignores_wall_time_and_invocations(tmp_path):
    first = _record_sample(tmp_path / "a", wall=1.0, tokens=10).seal()
    second = _record_sample(tmp_path / "b", wall=99.0, tokens=12345).seal()
    assert first == second
    changed = _record_sample(tmp_path / "c")
    changed.append("sli", {"t": 10.0, "q": 10.0, "e": 0.0, "l": 0.0})
    assert changed.seal() != first


def test_bad_input_is_refused_clearly(tmp_path):
    recorder = Recorder(tmp_path / "run", MANIFEST)
    with pytest.raises(ValueError, match="unknown bundle stream 'alert'"):
        recorder.append("alert", {"t": 0})
    with pytest.raises(ValueError):
        recorder.append("sli", {"t": float("nan")})
    recorder.seal()
    with pytest.raises(BundleError, match="already sealed"):
        recorder.append("sli", {"t": 1.0})
    with pytest.raises(BundleError, match="not empty"):
        Recorder(tmp_path / "run", MANIFEST)
    with pytest.raises(ValueError, match="seed"):
        Recorder(tmp_path / "other", {k: v for k, v in MANIFEST.items() if k != "seed"})


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_flipping_any_byte_of_a_sealed_bundle_is_detected(tmp_path_factory, data):
    directory = tmp_path_factory.mktemp("bundle") / "run"
    _record_sample(directory).seal()
    files = sorted(p.name for p in directory.iterdir() if p.stat().st_size)
    name = data.draw(st.sampled_from(files))
    path = directory / name
    raw = bytearray(path.read_bytes())
    offset = data.draw(st.integers(0, len(raw) - 1))
    raw[offset] ^= data.draw(st.integers(1, 255))
    path.chmod(0o644)
    path.write_bytes(bytes(raw))
    with pytest.raises(BundleError) as refusal:
        read_bundle(directory)
    assert name in str(refusal.value) or "manifest" in str(refusal.value)


def test_unknown_schema_version_is_refused(tmp_path):
    _record_sample(tmp_path / "run").seal()
    manifest_path = tmp_path / "run" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["schema_version"] = 99
    manifest_path.chmod(0o644)
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="unknown bundle schema version 99"):
        read_bundle(tmp_path / "run")


def test_exception_inside_recorder_leaves_an_incomplete_bundle(tmp_path):
    with pytest.raises(KeyboardInterrupt), Recorder(tmp_path / "run", MANIFEST) as recorder:
        recorder.append("sli", {"t": 0.0, "q": 1.0, "e": 0.0, "l": 0.0})
        raise KeyboardInterrupt
    with pytest.raises(BundleError, match="incomplete"):
        read_bundle(tmp_path / "run")
    bundle = read_bundle(tmp_path / "run", allow_incomplete=True)
    assert not bundle.complete and not bundle.sealed
    assert bundle.manifest["incomplete_reason"].startswith("KeyboardInterrupt")
    assert len(bundle.stream("sli")) == 1


def test_clean_exit_of_the_context_seals(tmp_path):
    with Recorder(tmp_path / "run", MANIFEST) as recorder:
        recorder.append("sli", {"t": 0.0, "q": 1.0, "e": 0.0, "l": 0.0})
    assert read_bundle(tmp_path / "run").sealed


def test_a_killed_run_leaves_a_readable_incomplete_bundle(tmp_path):
    directory = tmp_path / "run"
    script = (
        "import os, signal, sys\n"
        "from pytest_marathon.bundle import Recorder\n"
        f"r = Recorder(sys.argv[1], {MANIFEST!r})\n"
        "for i in range(3):\n"
        "    r.append('sli', {'t': 5.0 * i, 'q': 1.0, 'e': 0.0, 'l': 0.0})\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    completed = subprocess.run([sys.executable, "-c", script, str(directory)], check=False)
    assert completed.returncode != 0
    with (directory / "sli.jsonl").open("ab") as handle:
        handle.write(b'{"t":15.0,"q"')  # the line the process was writing when it died
    with pytest.raises(BundleError, match="incomplete"):
        read_bundle(directory)
    bundle = read_bundle(directory, allow_incomplete=True)
    assert bundle.status == "running"
    assert [r["t"] for r in bundle.stream("sli")] == [0.0, 5.0, 10.0]


def test_a_directory_without_manifest_is_not_a_bundle(tmp_path):
    os.makedirs(tmp_path / "empty")
    with pytest.raises(BundleError, match="no manifest.json"):
        read_bundle(tmp_path / "empty")
