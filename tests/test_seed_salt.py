"""The secret seed salt (issue 13): a salted run's schedule cannot be drawn from the public seed
and catalog, the manifest commits to the salt while the run goes and reveals it at sealing, the
scorer checks the reveal, and a killed run is scored with the salt given."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.bundle.format import MANIFEST, manifest_bytes, manifest_digest
from pytest_marathon.cli import main
from pytest_marathon.config import RunConfig
from pytest_marathon.faults import schedule_for
from pytest_marathon.run.baseline import baseline_path
from pytest_marathon.runner import record_marathon
from pytest_marathon.scoring import ScoreRefusal, score_bundle
from pytest_marathon.seed_salt import SEED_SALT_ENV, commitment, run_salt

SALT = "7c0ffee5a1t-for-the-tests-only"
OTHER = "another-secret-salt-0123456789"
TINY = """\
name: tiny
description: two faults, three invocations
warmup_s: 60
injection_window_s: 240
observation_s: 120
arrivals: 2
intensity: {start: 1.0, end: 1.0}
lifetime_s: {min: 120, max: 180}
max_concurrent: 2
"""


def _records(bundle: Path, stream: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (bundle / f"{stream}.jsonl").read_text().splitlines()]


def _manifest(bundle: Path) -> dict[str, Any]:
    return json.loads((bundle / MANIFEST).read_text())


def _bytes_of(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


@pytest.fixture
def tiny(tmp_path: Path) -> str:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return str(path)


# the schedule ----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_salted_schedule_differs_from_the_public_one_and_from_another_salts(seed: int) -> None:
    public = schedule_for("boutique", "short-5", seed).to_json()
    salted = schedule_for("boutique", "short-5", seed, salt=run_salt(SALT, "boutique", "short-5",
                                                                       seed)).to_json()
    other = schedule_for("boutique", "short-5", seed, salt=run_salt(OTHER, "boutique", "short-5",
                                                                      seed)).to_json()
    assert len({public, salted, other}) == 3
    again = schedule_for("boutique", "short-5", seed, salt=run_salt(SALT, "boutique", "short-5",
                                                                      seed)).to_json()
    assert again == salted  # a salt is a key, not noise: the same salt replays the run


def test_each_run_of_a_session_has_its_own_salt_so_one_reveal_opens_no_other_run() -> None:
    salts = {run_salt(SALT, "boutique", scenario, seed)
             for scenario in ("short-5", "marathon") for seed in (1, 2)}
    assert len(salts) == 4 and SALT not in salts


def test_a_short_salt_is_refused_before_anything_runs(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    code = main(["run", "--app", "boutique", "--agent", "noop", "--seed", "1", "--scenario",
                 "short-5", "--out", str(tmp_path / "b"), "--seed-salt", "s3cret-x"])
    assert code == 2
    err = capsys.readouterr().err
    assert "seed salt has 8 characters, fewer than 16" in err and "s3cret-x" not in err
    assert not (tmp_path / "b").exists()


# a salted run through the CLI --------------------------------------------------------------------


def test_a_salted_cli_run_commits_reveals_and_rescores_to_the_same_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SEED_SALT_ENV, SALT)
    out, cache = tmp_path / "bundles", tmp_path / "cache"
    args = ["run", "--app", "boutique", "--agent", "runbook", "--seed", "1", "--scenario",
            "short-5", "--out", str(out), "--baseline-cache", str(cache), "--json"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    bundle, noop = Path(result["bundle"]), Path(result["noop_bundle"])

    key = run_salt(SALT, "boutique", "short-5", 1)
    manifest = _manifest(bundle)
    assert manifest["config"]["seed_salt_commitment"] == commitment(key)
    assert manifest["seed_salt"] == key
    assert SALT.encode() not in _bytes_of(out) + _bytes_of(cache)  # only the run's salt, ever
    schedule = _records(bundle, "schedule")
    assert schedule == schedule_for("boutique", "short-5", 1, salt=key).records()
    assert schedule != schedule_for("boutique", "short-5", 1).records()

    # the noop baseline is a noop run with the same salt, and the cache keys on it
    noop_manifest = _manifest(noop)
    assert noop_manifest["agent"] == "noop"
    assert noop_manifest["config"]["seed_salt_commitment"] == commitment(key)
    assert _records(noop, "schedule") == schedule
    salted = RunConfig(app="boutique", agent="runbook", seed=1, scenario="short-5",
                       seed_salt=SALT)
    assert baseline_path(salted, cache) == noop
    for other in (None, OTHER):
        assert baseline_path(RunConfig(app="boutique", agent="runbook", seed=1,
                                       scenario="short-5", seed_salt=other), cache) != noop

    # re-scoring the sealed bundle needs no salt and gives the same numbers
    assert main(["score", str(bundle), "--noop", str(noop), "--json"]) == 0
    rescored = json.loads(capsys.readouterr().out)
    assert result["metrics"]["score"] > 0
    assert rescored["marathon_score"] == result["metrics"]["score"]
    assert rescored["degradation"]["level_percent"] == result["metrics"]["degradation_pct"]
    assert rescored["run"]["seed_salt_commitment"] == commitment(key)
    assert rescored["run"]["schedule_redrawn"] is False
    # the same-salt noop run is also Repaired's self-recovery counterfactual (same schedule)
    assert rescored["self_recovery"]["checked_against"] == "noop"
    assert rescored["self_recovery"]["unchecked"] == 0
    # ... and so does giving the right salt, while a wrong one is refused (the no-action bundle
    # given too: without it, Repaired is not checked for self-recovery and may differ)
    assert main(["score", str(bundle), "--noop", str(noop), "--json", "--seed-salt", SALT]) == 0
    assert json.loads(capsys.readouterr().out)["marathon_score"] == result["metrics"]["score"]
    assert main(["score", str(bundle), "--seed-salt", OTHER]) == 2
    assert "the given seed salt is not the one" in capsys.readouterr().err


def test_an_unsalted_baseline_is_not_the_baseline_of_a_salted_run(tmp_path: Path,
                                                                  tiny: str) -> None:
    salted = record_marathon(RunConfig(app="boutique", agent="runbook", seed=1, scenario=tiny,
                                       out_dir=tmp_path / "salted", seed_salt=SALT))
    public_noop = record_marathon(RunConfig(app="boutique", agent="noop", seed=1, scenario=tiny,
                                            out_dir=tmp_path / "public"))
    with pytest.raises(ScoreRefusal, match="config.seed_salt_commitment None != 'sha256:"):
        score_bundle(salted, noop=public_noop)


# the live bundle holds only the commitment ------------------------------------------------------


class ManifestPeek:
    """At every invocation, reads the live bundle as an agent that can see it would."""

    name = "manifest-peek"
    description = "reads the live bundle folder during the run"

    def __init__(self, bundle: Path) -> None:
        self.bundle = bundle
        self.seen: list[dict[str, Any]] = []
        self.contents: list[bytes] = []

    def invoke(self, ctx: Any) -> None:
        self.seen.append(_manifest(self.bundle))
        self.contents.append(_bytes_of(self.bundle))


def test_the_live_manifest_holds_only_the_commitment_and_the_sealed_one_the_salt(
    tmp_path: Path, tiny: str
) -> None:
    config = RunConfig(app="boutique", agent="tests:ManifestPeek", seed=1, scenario=tiny,
                       out_dir=tmp_path / "out", seed_salt=SALT)
    peek = ManifestPeek(config.bundle_dir)
    bundle = record_marathon(config, agent=peek)
    key = run_salt(SALT, "boutique", tiny, 1)

    assert len(peek.seen) == 3
    for live, files in zip(peek.seen, peek.contents):
        assert live["status"] == "running"
        assert live["config"]["seed_salt_commitment"] == commitment(key)
        assert "seed_salt" not in live
        assert key.encode() not in files and SALT.encode() not in files
        assert b"catalog_id" not in files  # nor the schedule it would unlock
    sealed = _manifest(bundle)
    assert sealed["status"] == "complete" and sealed["seed_salt"] == key
    assert sealed["config"]["seed_salt_commitment"] == peek.seen[0]["config"][
        "seed_salt_commitment"]
    assert SALT.encode() not in _bytes_of(bundle)
    assert score_bundle(bundle)["faults"] == len(_records(bundle, "schedule")) == 2


def _forge_manifest(bundle: Path, **changes: Any) -> None:
    """Rewrite the manifest with valid digests, as anyone without a signing key can."""
    path = bundle / MANIFEST
    manifest = {**json.loads(path.read_text()), **changes}
    manifest["manifest_digest"] = manifest_digest(manifest)
    path.chmod(0o644)
    path.write_bytes(manifest_bytes(manifest))


def test_a_bundle_whose_revealed_salt_does_not_match_its_commitment_is_refused(
    tmp_path: Path, tiny: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = record_marathon(RunConfig(app="boutique", agent="noop", seed=1, scenario=tiny,
                                       out_dir=tmp_path / "out", seed_salt=SALT))
    assert main(["score", str(bundle)]) == 0
    capsys.readouterr()
    _forge_manifest(bundle, seed_salt=run_salt(OTHER, "boutique", tiny, 1))
    assert main(["score", str(bundle)]) == 2
    err = capsys.readouterr().err
    assert "reveals does not match the commitment" in err and len(err.splitlines()) == 1
    _forge_manifest(bundle, seed_salt=None)
    with pytest.raises(ScoreRefusal, match="does not match the commitment"):
        score_bundle(bundle)


# a killed run ------------------------------------------------------------------------------------


def test_a_killed_salted_run_is_scored_with_the_salt_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = run_salt(SALT, "boutique", "short-5", 1)
    first_inject = min(f.inject_at for f in schedule_for("boutique", "short-5", 1, salt=key).faults)
    out = tmp_path / "bundles"
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest_marathon.cli", "run", "--app", "boutique", "--agent",
         "noop", "--seed", "1", "--scenario", "short-5", "--out", str(out)],
        env={**os.environ, SEED_SALT_ENV: SALT}, stderr=subprocess.DEVNULL,
    )
    bundle = out / "boutique-noop-seed1-short-5"
    invocations = bundle / "invocations.jsonl"
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline:  # kill once a fault has been injected for a while
            lines = invocations.read_text().splitlines() if invocations.exists() else []
            if lines and json.loads(lines[-1])["t"] >= first_inject + 240:
                break
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=60)
    manifest = _manifest(bundle)
    assert manifest["status"] == "running" and "seed_salt" not in manifest
    assert (bundle / "schedule.jsonl").read_bytes() == b""

    base = ["score", str(bundle), "--allow-incomplete", "--json"]
    assert main(base) == 2
    assert "give the run's seed salt (--seed-salt" in capsys.readouterr().err
    assert main([*base, "--seed-salt", OTHER]) == 2
    assert "the given seed salt is not the one" in capsys.readouterr().err

    assert main([*base, "--seed-salt", SALT]) == 0
    scored = json.loads(capsys.readouterr().out)
    run_end = max(r["t"] for r in _records(bundle, "sli"))
    injected = [r for r in schedule_for("boutique", "short-5", 1, salt=key).records()
                if r["inject_at"] <= run_end]
    assert scored["run"]["schedule_redrawn"] is True and scored["run"]["complete"] is False
    assert scored["faults"] == len(injected) >= 1
    assert [row["fault_id"] for row in scored["per_fault"]] == [r["fault_id"] for r in injected]
    assert [row["catalog_id"] for row in scored["per_fault"]] == [r["catalog_id"]
                                                                  for r in injected]

    # the catalog the schedule is redrawn from must be the one the run used
    _forge_manifest(bundle, config={**manifest["config"], "catalog_digest": "0" * 64})
    assert main([*base, "--seed-salt", SALT]) == 2
    err = capsys.readouterr().err
    assert "the installed fault catalog of 'boutique'" in err and "differs" in err


# the pytest plugin ------------------------------------------------------------------------------


def test_the_plugin_takes_the_salt_from_the_environment_or_its_option(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tiny: str
) -> None:
    monkeypatch.setenv(SEED_SALT_ENV, SALT)
    grid = ["--marathon-app=boutique", "--agent=noop", f"--marathon-scenario={tiny}",
            "-p", "no:cacheprovider"]
    result = pytester.runpytest_subprocess(*grid)
    result.assert_outcomes(passed=1)
    (bundle,) = (pytester.path / ".marathon" / "bundles").iterdir()
    key = run_salt(SALT, "boutique", tiny, 1)
    assert _manifest(bundle)["config"]["seed_salt_commitment"] == commitment(key)
    assert _manifest(bundle)["seed_salt"] == key
    assert SALT not in result.stdout.str() + result.stderr.str()

    refused = pytester.runpytest_subprocess(*grid, "--marathon-seed-salt=too-short")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in refused.stderr.lines if line.strip()] == [
        "ERROR: --marathon-seed-salt: the seed salt has 9 characters, fewer than 16: its hash is "
        "public while the run goes, so a short salt can be guessed from it (use e.g. python -c "
        '"import secrets; print(secrets.token_hex(16))")'
    ]
    monkeypatch.setenv(SEED_SALT_ENV, "short")
    refused = pytester.runpytest_subprocess(*grid)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {SEED_SALT_ENV}: the seed salt has 5 characters" in refused.stderr.str()


def _killed_bundle(directory: Path, config: RunConfig, until: float) -> Path:
    """What a SIGKILL leaves: the recorder's live files, the schedule still held in memory."""
    from pytest_marathon import RELEASE
    from pytest_marathon.bundle import Recorder

    manifest = {"release": RELEASE, "app": config.app, "scenario": config.scenario,
                "seed": config.seed, "agent": config.agent, "backend": config.backend,
                "config": config.manifest_config()}
    recorder = Recorder(directory, manifest, hold=("schedule",),
                        reveal={} if config.run_salt is None else {"seed_salt": config.run_salt})
    recorder.append("schedule", {"fault_id": "f01", "inject_at": 0.0})  # held: never written
    for step in range(int(until // 5) + 1):
        recorder.append("sli", {"t": 5.0 * step, "q": 10.0, "e": 0.0, "l": 0.0})
    return directory


@pytest.mark.parametrize("salt", [None, SALT], ids=["unsalted", "salted"])
def test_a_killed_runs_schedule_is_redrawn_up_to_where_it_stopped(
    tmp_path: Path, salt: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    config = RunConfig(app="boutique", agent="noop", seed=2, scenario="short-5", seed_salt=salt)
    bundle = _killed_bundle(tmp_path / "killed", config, until=700.0)
    scored = score_bundle(bundle, allow_incomplete=True, seed_salt=salt)
    expected = [r for r in schedule_for("boutique", "short-5", 2, salt=config.run_salt).records()
                if r["inject_at"] <= 700.0]
    assert scored["run"]["schedule_redrawn"] is True
    assert [(row["fault_id"], row["catalog_id"], row["inject_at"]) for row in scored["per_fault"]] \
        == [(r["fault_id"], r["catalog_id"], r["inject_at"]) for r in expected]
    assert expected  # the comparison above is about faults, not about two empty lists

    args = ["schedule", "--app", "boutique", "--seed", "2", "--scenario", "short-5", "--json"]
    assert main([*args, *([] if salt is None else ["--seed-salt", salt])]) == 0
    drawn = json.loads(capsys.readouterr().out)
    assert [r for r in drawn if r["inject_at"] <= 700.0] == expected


def test_an_interrupted_salted_run_reveals_its_salt_when_closed(tmp_path: Path) -> None:
    """Ctrl-C, SIGTERM or an error close the bundle incomplete: the salt is revealed then too,
    so the bundle scores without it (a run closed on an error is as good as sealed for this)."""
    from pytest_marathon import RELEASE
    from pytest_marathon.bundle import Recorder

    config = RunConfig(app="boutique", agent="noop", seed=2, scenario="short-5", seed_salt=SALT)
    manifest = {"release": RELEASE, "app": "boutique", "scenario": "short-5", "seed": 2,
                "agent": "noop", "backend": "twin", "config": config.manifest_config()}
    recorder = Recorder(tmp_path / "run", manifest, hold=("schedule",),
                        reveal={"seed_salt": config.run_salt})
    for record in schedule_for("boutique", "short-5", 2, salt=config.run_salt).records()[:1]:
        recorder.append("schedule", record)
    recorder.append("sli", {"t": 0.0, "q": 10.0, "e": 0.0, "l": 0.0})
    assert "seed_salt" not in _manifest(tmp_path / "run")
    recorder.close_incomplete("interrupted (SIGINT)")
    assert _manifest(tmp_path / "run")["seed_salt"] == config.run_salt
    scored = score_bundle(tmp_path / "run", allow_incomplete=True)
    assert scored["faults"] == 1 and scored["run"]["schedule_redrawn"] is False
    with pytest.raises(ValueError, match="set elsewhere"):
        Recorder(tmp_path / "other", {**manifest, "seed_salt": "x"}, reveal={"seed_salt": "y"})


def test_an_agent_process_does_not_inherit_the_salt_from_the_environment(
    tmp_path: Path, tiny: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The probe exits 3 (a crash) if it sees the salt: its exit code is all it needs to tell,
    whatever sandbox it runs in."""
    probe = tmp_path / "probe.py"
    probe.write_text(f"import os, sys\nsys.exit(3 if os.environ.get({SEED_SALT_ENV!r}) else 0)\n")
    monkeypatch.setenv(SEED_SALT_ENV, SALT)
    assert main(["run", "--app", "boutique", "--agent", f"cmd:{sys.executable} {probe}",
                 "--seed", "1", "--scenario", tiny, "--out", str(tmp_path / "b"),
                 "--baseline-cache", str(tmp_path / "c"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["invocations"] == {"ok": 3}
    assert _manifest(Path(result["bundle"]))["config"]["seed_salt_commitment"] is not None
