"""Admission validation through `pytest-marathon validate-catalog`: real faults are admitted with
their evidence and measured scope; a change with no observable effect is rejected with reasons."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pytest_marathon.faults.catalog import catalog_root, load_catalog

SHIPPED = Path(str(catalog_root("boutique")))


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from pytest_marathon.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def sample_ids():
    """One entry per mechanism family: a code patch, a setting, a chaos experiment."""
    catalog = load_catalog("boutique")
    code = next(e.id for e in catalog if e.category == "code")
    setting = next(e.id for e in catalog if e.id.startswith("cfg-host-frontend"))
    chaos = next(e.id for e in catalog if e.id == "net-partition-frontend-cartservice")
    return [code, setting, chaos]


@pytest.mark.slow
def test_representative_entries_are_admitted_with_evidence(sample_ids):
    result = run_cli("validate-catalog", "--app", "boutique", "--json", "--only", *sample_ids)
    report = json.loads(result.stdout)
    by_id = {v["entry_id"]: v for v in report["entries"]}
    assert set(by_id) == set(sample_ids)
    for entry_id, verdict in by_id.items():
        assert verdict["admitted"], (entry_id, verdict["reasons"])
        measured = verdict["measured"]
        assert measured["message_before"] == 0 and measured["message_after"] > 0
        assert measured["probe_failed_samples"] > 0 and measured["alerts"]
        assert verdict["target"] in verdict["scope"]
    assert result.returncode == 0


def test_a_change_nobody_notices_is_rejected_with_reasons(tmp_path):
    for sub in ("patches", "experiments"):
        shutil.copytree(SHIPPED / sub, tmp_path / sub)
    entry = yaml.safe_load((SHIPPED / "cfg-host-frontend-cart-service.yaml").read_text())
    entry["id"] = "cfg-harmless"
    # a setting the frontend does not read: the change ships, nothing breaks
    entry["injection"] = {"env": {"UNUSED_TUNING_KNOB": "42"}}
    entry["artifact"] = "env:frontend/UNUSED_TUNING_KNOB"
    (tmp_path / "cfg-harmless.yaml").write_text(yaml.safe_dump(entry))
    result = run_cli("validate-catalog", "--app", "boutique", "--root", str(tmp_path), "--json")
    assert result.returncode == 1
    (verdict,) = json.loads(result.stdout)["entries"]
    assert not verdict["admitted"]
    reasons = " | ".join(verdict["reasons"])
    assert "never appeared" in reasons and "screening criterion" in reasons
    assert "probe never failed" in reasons


def test_unknown_entry_is_a_clear_error():
    result = run_cli("validate-catalog", "--app", "boutique", "--only", "no-such-entry")
    assert result.returncode == 2 and "no-such-entry" in result.stderr


def test_every_broken_entry_is_named_at_once(tmp_path):
    """An author fixing a catalog sees all its schema errors in one run, not one per run."""
    for sub in ("patches", "experiments"):
        shutil.copytree(SHIPPED / sub, tmp_path / sub)
    entry = yaml.safe_load((SHIPPED / "cfg-host-frontend-cart-service.yaml").read_text())
    (tmp_path / "cfg-ok.yaml").write_text(yaml.safe_dump({**entry, "id": "cfg-ok"}))
    (tmp_path / "cfg-no-category.yaml").write_text(
        yaml.safe_dump({k: v for k, v in {**entry, "id": "cfg-no-category"}.items()
                        if k != "category"}))
    (tmp_path / "cfg-not-yaml.yaml").write_text("id: [unclosed\n")
    result = run_cli("validate-catalog", "--app", "boutique", "--root", str(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "2 invalid catalog entries" in result.stderr
    assert "cfg-no-category.yaml" in result.stderr and "cfg-not-yaml.yaml" in result.stderr
    assert "cfg-ok.yaml" not in result.stderr


def test_each_verdict_is_shown_as_soon_as_it_is_judged(sample_ids):
    """A whole catalog takes minutes: each entry's line arrives while the rest still run, and
    with --json the lines go to stderr so stdout stays one JSON document."""
    code = "import sys; from pytest_marathon.cli import main; sys.exit(main(sys.argv[1:]))"
    process = subprocess.Popen(
        [sys.executable, "-c", code, "validate-catalog", "--app", "boutique", "--json",
         "--workers", "1", "--only", *sample_ids[:2]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert process.stderr is not None
    first = process.stderr.readline()
    still_running = process.poll() is None
    stdout, rest = process.communicate(timeout=600)
    assert first.startswith("[1/2] "), first + rest
    assert still_running, "the first verdict was shown only when everything had finished"
    assert rest.splitlines()[0].startswith("[2/2] ")
    assert {v["entry_id"] for v in json.loads(stdout)["entries"]} == set(sample_ids[:2])
