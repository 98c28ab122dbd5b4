"""The recorder writes bundles the reader can prove untouched, and interruptions stay readable."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import pytest_marathon.scenarios
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_marathon.bundle import STREAMS, BundleError, Recorder, read_bundle
from pytest_marathon.bundle.format import manifest_bytes, manifest_digest
from pytest_marathon.config import RunConfig
from pytest_marathon.run.baseline import baseline_path, baseline_path_for
from pytest_marathon.runner import record_marathon, run_marathon
from pytest_marathon.scoring import ScoreRefusal, score_bundle

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
    assert bundle.manifest["schema_version"] == 3
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


@pytest.mark.parametrize("finish", ["seal", "close_incomplete"])
def test_a_held_stream_reaches_the_disk_only_when_the_bundle_is_finished(tmp_path, finish):
    """The runner holds `schedule` so an agent cannot read it live; the finished bundle must be
    byte for byte the one an unheld recorder writes, digests included."""
    records = [
        {"fault_id": "f01", "inject_at": 0.0, "revert_at": 300.0, "culprits": ["cart"]},
        {"fault_id": "f02", "inject_at": 60.0, "revert_at": 400.0, "culprits": ["ad"]},
    ]
    held = Recorder(tmp_path / "held", MANIFEST, hold=("schedule",))
    plain = Recorder(tmp_path / "plain", MANIFEST)
    for recorder in (held, plain):
        for record in records:
            recorder.append("schedule", dict(record))
        recorder.append("sli", {"t": 0.0, "q": 1.0, "e": 0.0, "l": 0.0})
    assert (tmp_path / "held" / "schedule.jsonl").read_bytes() == b""  # live: nothing to read
    assert (tmp_path / "held" / "sli.jsonl").read_bytes() != b""  # others still flushed at once
    for recorder in (held, plain):
        recorder.seal() if finish == "seal" else recorder.close_incomplete("stopped")
    for name in ("schedule.jsonl", "sli.jsonl", "manifest.json"):
        assert (tmp_path / "held" / name).read_bytes() == (tmp_path / "plain" / name).read_bytes()
    bundle = read_bundle(tmp_path / "held", allow_incomplete=True)
    assert bundle.stream("schedule") == records


def test_a_held_record_is_frozen_when_appended_and_unknown_held_streams_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown bundle stream"):
        Recorder(tmp_path / "bad", MANIFEST, hold=("answers",))
    recorder = Recorder(tmp_path / "run", MANIFEST, hold=("schedule",))
    record = {"fault_id": "f01", "inject_at": 0.0, "revert_at": 300.0}
    recorder.append("schedule", record)
    record["revert_at"] = 1.0  # the caller keeps its dict; what was appended is what is written
    recorder.seal()
    assert read_bundle(tmp_path / "run").stream("schedule")[0]["revert_at"] == 300.0


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


# refusals of the reader ----------------------------------------------------------------------


def _rewrite_manifest(directory: Path, **changes: object) -> None:
    """Edit manifest.json as a forger would: change fields, then recompute its own digest and
    write it in the recorder's exact form, so only the rule under test can refuse it."""
    path = directory / "manifest.json"
    manifest = json.loads(path.read_text())
    for key, value in changes.items():
        if value is _DELETE:
            manifest.pop(key, None)
        else:
            manifest[key] = value
    manifest["manifest_digest"] = manifest_digest(manifest)
    path.chmod(0o644)
    path.write_bytes(manifest_bytes(manifest))


_DELETE = object()


def _edit_stream(directory: Path, name: str = "sli.jsonl") -> None:
    path = directory / name
    path.chmod(0o644)
    path.write_text(path.read_text().replace('"e":0.5', '"e":0.0'))


def test_running_with_complete_true_is_refused_and_never_skips_verification(tmp_path):
    directory = tmp_path / "run"
    _record_sample(directory).seal()
    _edit_stream(directory)
    _rewrite_manifest(directory, status="running")
    for allow in (False, True):
        with pytest.raises(BundleError, match="inconsistent: status 'running' with complete True"):
            read_bundle(directory, allow_incomplete=allow)


@pytest.mark.parametrize(
    ("changes", "shown"),
    [
        ({"sealed": False}, "status 'complete' with complete True, sealed False"),
        ({"status": "incomplete"}, "status 'incomplete' with complete True"),
        ({"status": "running", "complete": False, "sealed": False}, "running"),
        ({"complete": 1}, "complete 1"),
        ({"status": "done"}, "status 'done'"),
        ({"files": _DELETE}, "no list of files"),
    ],
)
def test_a_manifest_whose_status_fields_disagree_is_refused(tmp_path, changes, shown):
    directory = tmp_path / "run"
    _record_sample(directory).seal()
    _rewrite_manifest(directory, **changes)
    with pytest.raises(BundleError, match="inconsistent") as refusal:
        read_bundle(directory, allow_incomplete=True)
    assert shown in str(refusal.value)


def test_a_content_digest_the_streams_do_not_reproduce_is_refused(tmp_path):
    directory = tmp_path / "run"
    _record_sample(directory).seal()
    _rewrite_manifest(directory, content_digest="0" * 64)
    with pytest.raises(BundleError, match="content digest of .* does not match its manifest"):
        read_bundle(directory)


def test_a_closed_incomplete_bundle_has_its_content_digest_recomputed_too(tmp_path):
    directory = tmp_path / "run"
    recorder = _record_sample(directory)
    recorder.close_incomplete("twin crashed")
    assert read_bundle(directory, allow_incomplete=True).status == "incomplete"
    _rewrite_manifest(directory, content_digest="0" * 64)
    with pytest.raises(BundleError, match="content digest"):
        read_bundle(directory, allow_incomplete=True)


@pytest.mark.parametrize("extra", ["notes.txt", ".hidden", "streams"])
def test_a_file_the_manifest_does_not_list_is_refused_by_name(tmp_path, extra):
    directory = tmp_path / "run"
    _record_sample(directory).seal()
    if extra == "streams":
        (directory / extra).mkdir()
    else:
        (directory / extra).write_text("{}\n")
    with pytest.raises(BundleError, match=f"{extra} in .* is not part of the bundle"):
        read_bundle(directory)


def test_a_signature_file_in_an_incomplete_bundle_is_refused(tmp_path):
    directory = tmp_path / "run"
    _record_sample(directory).close_incomplete("stopped")
    (directory / "signature.json").write_text("{}\n")
    with pytest.raises(BundleError, match="signature.json in .* is not part of the bundle"):
        read_bundle(directory, allow_incomplete=True)


def test_a_missing_stream_file_is_refused_by_name(tmp_path):
    directory = tmp_path / "run"
    _record_sample(directory).seal()
    (directory / "probes.jsonl").unlink()
    with pytest.raises(BundleError, match="probes.jsonl is missing"):
        read_bundle(directory)


def test_a_running_bundle_is_read_only_on_request_and_only_with_its_streams(tmp_path):
    directory = tmp_path / "run"
    _record_sample(directory)  # never sealed: the manifest still says running
    with pytest.raises(BundleError, match="incomplete"):
        read_bundle(directory)
    assert read_bundle(directory, allow_incomplete=True).status == "running"
    (directory / "extra.jsonl").write_text("")
    with pytest.raises(BundleError, match="extra.jsonl in .* is not part of the bundle"):
        read_bundle(directory, allow_incomplete=True)


def test_a_version_1_bundle_is_refused_as_written_by_an_older_release(tmp_path):
    directory = tmp_path / "run"
    _record_sample(directory).seal()
    _rewrite_manifest(directory, schema_version=1)
    with pytest.raises(BundleError, match="older release") as refusal:
        read_bundle(directory)
    assert "schema version 1" in str(refusal.value) and "re-run" in str(refusal.value)


def test_a_manifest_with_equal_json_but_other_bytes_is_refused(tmp_path):
    """The signature is over bytes, so the reader accepts only the bytes the recorder writes."""
    directory = tmp_path / "run"
    _record_sample(directory).seal()
    path = directory / "manifest.json"
    path.chmod(0o644)
    path.write_bytes(path.read_bytes().rstrip(b"\n") + b" ")
    with pytest.raises(BundleError, match="manifest.json of .* was modified"):
        read_bundle(directory)


# the run configuration a manifest records, and the baseline rule built on it -----------------

CONFIG = {
    "users": 10,
    "delta_s": 120.0,
    "budget_s": 110.0,
    "mutation_cap": 10,
    "scenario_digest": "a" * 64,
    "catalog_digest": "b" * 64,
    "rule_pack_digest": "c" * 64,
}


def _run_bundle(directory: Path, agent: str = "runbook", backend: str = "twin",
                **config: object) -> Path:
    manifest = {**MANIFEST, "agent": agent, "backend": backend,
                "config": {**CONFIG, "agent": agent, **config}}
    with Recorder(directory, manifest) as recorder:
        recorder.append("sli", {"t": 0.0, "q": 10.0, "e": 0.0, "l": 0.0})
        recorder.append("sli", {"t": 5.0, "q": 10.0, "e": 0.5, "l": 0.0})
    return directory


def test_the_noop_baseline_of_the_same_configuration_is_accepted(tmp_path):
    agent = _run_bundle(tmp_path / "agent")
    noop = _run_bundle(tmp_path / "noop", agent="noop")
    report = score_bundle(agent, noop=noop)
    assert report["degradation"]["level_percent"] == pytest.approx(100.0)


@pytest.mark.parametrize(
    ("noop_changes", "named"),
    [
        ({"agent": "runbook"}, "agent 'runbook' is not the no-action agent 'noop'"),
        ({"users": 4}, "config.users 4 != 10"),
        ({"delta_s": 60.0}, "config.delta_s 60.0 != 120.0"),
        ({"budget_s": 30.0}, "config.budget_s 30.0 != 110.0"),
        ({"mutation_cap": 3}, "config.mutation_cap 3 != 10"),
        ({"catalog_digest": "d" * 64}, f"config.catalog_digest {'d' * 64!r} != {'b' * 64!r}"),
        ({"scenario_digest": "d" * 64}, "config.scenario_digest"),
        ({"rule_pack_digest": "d" * 64}, "config.rule_pack_digest"),
        ({"backend": "k8s"}, "backend 'k8s' != 'twin'"),
    ],
)
def test_a_baseline_that_is_not_the_noop_run_of_the_same_configuration_is_refused(
    tmp_path, noop_changes, named
):
    agent = _run_bundle(tmp_path / "agent")
    changes = {"agent": "noop", **noop_changes}
    noop = _run_bundle(tmp_path / "noop", **changes)
    with pytest.raises(ScoreRefusal, match="is not the baseline of") as refusal:
        score_bundle(agent, noop=noop)
    assert named in str(refusal.value)


def test_every_difference_of_a_baseline_is_named(tmp_path):
    agent = _run_bundle(tmp_path / "agent")
    noop = _run_bundle(tmp_path / "noop", agent="runbook", users=4, catalog_digest="d" * 64)
    with pytest.raises(ScoreRefusal) as refusal:
        score_bundle(agent, noop=noop)
    message = str(refusal.value)
    assert "agent 'runbook'" in message and "config.users 4 != 10" in message
    assert "config.catalog_digest" in message


def test_the_manifest_config_is_the_effective_configuration_with_file_digests(tmp_path):
    scenario_text = (Path(pytest_marathon.scenarios.__file__).parent / "short-5.yaml").read_bytes()
    default = RunConfig(app="boutique", agent="noop", seed=1, scenario="short-5")
    config = default.manifest_config()
    assert config["users"] == 10 and isinstance(config["users"], int)
    assert (config["delta_s"], config["budget_s"], config["mutation_cap"]) == (120.0, 110.0, 10)
    assert config["backend"] == "twin"
    assert config["scenario_digest"] == hashlib.sha256(scenario_text).hexdigest()
    assert len(config["catalog_digest"]) == len(config["rule_pack_digest"]) == 64
    assert config == RunConfig(app="boutique", agent="noop", seed=1, scenario="short-5",
                               users=10, delta_s=120).manifest_config()
    copy = tmp_path / "short-5.yaml"
    copy.write_bytes(scenario_text)
    from_file = RunConfig(app="boutique", agent="noop", seed=1, scenario=str(copy))
    assert from_file.manifest_config()["scenario_digest"] == config["scenario_digest"]
    copy.write_bytes(scenario_text.replace(b"description:", b"description: changed"))
    assert from_file.manifest_config()["scenario_digest"] != config["scenario_digest"]


def test_the_baseline_cache_is_keyed_on_the_configuration_the_scorer_compares(tmp_path):
    cache = tmp_path / "cache"
    base = RunConfig(app="boutique", agent="runbook", seed=1, scenario="short-5")
    path = baseline_path(base, cache)
    same = [
        replace(base, agent="noop"),
        replace(base, out_dir=tmp_path / "elsewhere"),
        replace(base, users=10),  # the app's default, spelled out
    ]
    assert all(baseline_path(config, cache) == path for config in same)
    other = [
        replace(base, users=4),
        replace(base, delta_s=60.0),
        replace(base, budget_s=30.0),
        replace(base, mutation_cap=2),
        replace(base, seed=2),
    ]
    paths = {baseline_path(config, cache) for config in other}
    assert path not in paths and len(paths) == len(other)
    scenario = tmp_path / "short-5.yaml"
    scenario.write_bytes(
        (Path(pytest_marathon.scenarios.__file__).parent / "short-5.yaml").read_bytes()
    )
    from_file = baseline_path(replace(base, scenario=str(scenario)), cache)
    scenario.write_text(scenario.read_text() + "\n# edited\n")
    assert baseline_path(replace(base, scenario=str(scenario)), cache) != from_file


@pytest.fixture(scope="module")
def few_users(tmp_path_factory) -> dict[str, Path]:
    """A recorded noop run with 4 users against the cache, and one with the default users."""
    root = tmp_path_factory.mktemp("users")
    cache = root / "cache"
    config = RunConfig(app="boutique", agent="noop", seed=2, scenario="short-5", users=4,
                       out_dir=root / "few")
    result = run_marathon(config, baseline_cache=cache)
    default = record_marathon(replace(config, users=None, out_dir=root / "default"))
    return {"few": result.bundle, "few_noop": result.noop_bundle, "default": default,
            "cache": cache}


def test_a_run_records_its_effective_configuration(few_users):
    manifest = read_bundle(few_users["few"]).manifest
    assert manifest["config"]["users"] == 4
    assert read_bundle(few_users["default"]).manifest["config"]["users"] == 10
    for name in ("scenario_digest", "catalog_digest", "rule_pack_digest"):
        assert manifest["config"][name] == read_bundle(few_users["default"]).manifest["config"][name]


def test_a_run_with_other_users_does_not_reuse_nor_accept_the_default_baseline(few_users):
    few, default = few_users["few"], few_users["default"]
    assert few_users["few_noop"] == baseline_path_for(read_bundle(few).manifest,
                                                      few_users["cache"])
    assert baseline_path_for(read_bundle(default).manifest, few_users["cache"]) != few_users[
        "few_noop"]
    with pytest.raises(ScoreRefusal, match="config.users 10 != 4"):
        score_bundle(few, noop=default)
    assert score_bundle(few, noop=few_users["few_noop"])["degradation"]["noop_agent"] == "noop"


def test_a_manifest_holding_json_the_recorder_never_writes_is_refused(tmp_path):
    directory = tmp_path / "run"
    _record_sample(directory).seal()
    path = directory / "manifest.json"
    path.chmod(0o644)
    path.write_bytes(path.read_bytes().replace(b'"seed":7', b'"seed":NaN'))
    with pytest.raises(BundleError, match="manifest.json of .* was modified"):
        read_bundle(directory)
