"""The admission record decides which entries CI admits again, so its staleness rule is pinned:
an entry is current only while its inputs (the parsed entry without its scope, the engine files,
the interpreter) are those its row was measured on."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest_marathon
from pytest_marathon.faults.admission_record import (
    RECORD_NAME,
    RecordedVerdict,
    audit_sample,
    engine_digest,
    engine_files,
    entry_inputs,
    load_record,
    stale_entries,
    write_record,
)
from pytest_marathon.faults.catalog import CatalogError, catalog_root, load_catalog

ENTRY = "auth-redis-rotated"
SHIPPED = load_catalog("boutique")
ENGINE = engine_digest("boutique")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_marathon", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def catalog_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "boutique"
    shutil.copytree(str(catalog_root("boutique")), folder)
    (folder / RECORD_NAME).unlink(missing_ok=True)
    return folder


def _record_all_current(folder: Path, engine: str | None = None) -> dict[str, RecordedVerdict]:
    catalog = load_catalog("boutique", folder)
    engine = engine or engine_digest("boutique")
    return {e.id: RecordedVerdict(entry_inputs(e, engine), True, e.scope) for e in catalog}


def test_write_scope_records_the_verdict_and_a_changed_entry_is_admitted_again(
    catalog_copy: Path,
) -> None:
    first = _cli("validate-catalog", "--app", "boutique", "--root", str(catalog_copy),
                 "--only", ENTRY, "--write-scope", "--workers", "1")
    assert first.returncode == 0, first.stderr
    row = json.loads((catalog_copy / RECORD_NAME).read_text())["entries"][ENTRY]
    assert row["admitted"] is True
    assert tuple(row["scope"]) == load_catalog("boutique", catalog_copy).get(ENTRY).scope

    unchanged = _cli("validate-catalog", "--app", "boutique", "--root", str(catalog_copy),
                     "--only", ENTRY, "--stale")
    assert unchanged.returncode == 0, unchanged.stderr
    assert "0 of 1 entries changed since the admission record" in unchanged.stdout

    path = catalog_copy / f"{ENTRY}.yaml"
    path.write_text(path.read_text().replace("recovery: ", "recovery: Then ", 1))
    changed = _cli("validate-catalog", "--app", "boutique", "--root", str(catalog_copy),
                   "--only", ENTRY, "--stale")
    assert changed.returncode == 0, changed.stderr
    assert "1 of 1 entries changed since the admission record" in changed.stdout
    assert f"admitted  {ENTRY}" in changed.stdout


def test_rewriting_the_measured_scope_keeps_an_entry_current(catalog_copy: Path) -> None:
    record = _record_all_current(catalog_copy)
    path = catalog_copy / f"{ENTRY}.yaml"
    path.write_text(re.sub(r"(?m)^scope:.*$", "scope: [frontend]", path.read_text()))
    assert stale_entries(load_catalog("boutique", catalog_copy), record,
                         engine_digest("boutique")) == []


@settings(max_examples=25, deadline=None)
@given(field=st.sampled_from(["change_cause", "log_message", "target", "recovery"]),
       suffix=st.text(alphabet="abcxyz", min_size=1, max_size=4))
def test_changing_any_other_field_changes_the_entrys_inputs(field: str, suffix: str) -> None:
    entry = SHIPPED.get(ENTRY)
    changed = entry.__class__(**{**entry.__dict__, field: getattr(entry, field) + suffix})
    assert entry_inputs(changed, ENGINE) != entry_inputs(entry, ENGINE)
    assert entry_inputs(entry, ENGINE) == entry_inputs(SHIPPED.get(ENTRY), ENGINE)


def test_a_changed_experiment_file_makes_its_entry_stale(catalog_copy: Path) -> None:
    record = _record_all_current(catalog_copy)
    path = catalog_copy / "experiments" / f"{ENTRY}.json"
    experiment = json.loads(path.read_text())
    experiment["title"] = experiment.get("title", "") + " again"
    path.write_text(json.dumps(experiment))
    catalog = load_catalog("boutique", catalog_copy)
    assert [e.id for e in stale_entries(catalog, record, engine_digest("boutique"))] == [ENTRY]


def test_an_entry_without_a_row_or_under_another_engine_is_stale(catalog_copy: Path) -> None:
    catalog = load_catalog("boutique", catalog_copy)
    record = _record_all_current(catalog_copy)
    del record[ENTRY]
    assert [e.id for e in stale_entries(catalog, record, engine_digest("boutique"))] == [ENTRY]
    assert len(stale_entries(catalog, record, "another engine")) == len(catalog)


def test_the_engine_covers_what_a_trial_runs_and_not_the_catalog() -> None:
    paths = {relative for relative, _file in engine_files("boutique")}
    for needed in ("twin/engine.py", "faults/admission.py", "alerting/pack/boutique.rules.yaml",
                   "twin/apps/boutique/app.yaml",
                   "twin/apps/boutique/services/frontend/service.py", "scenarios/marathon.yaml"):
        assert needed in paths
    assert not any(p.startswith(("fault_catalog/", "agents/", "docs/")) or "__pycache__" in p
                   for p in paths)
    # another app's service code and rule pack are data a boutique trial never reads
    assert not any(p.startswith(("twin/apps/trainticket/", "twin/apps/astronomy/")) for p in paths)
    assert not {"alerting/pack/trainticket.rules.yaml", "alerting/pack/astronomy.rules.yaml"} & paths
    # what a trial cannot run is not an input: work on the scorer, plugin or CLI keeps the record
    assert not {"plugin.py", "cli.py", "runner.py", "scoring/scorer.py"} & paths


def test_every_module_a_trial_loads_is_an_input() -> None:
    """The import closure is static; a direct fault (Chaos Toolkit) and a code fault (a build and
    a rollout) are admitted in a fresh interpreter and every package module it loaded must be
    among the inputs."""
    script = (
        "import json, sys\n"
        "from pytest_marathon.faults.admission import validate_entry\n"
        "from pytest_marathon.faults.catalog import load_catalog\n"
        "catalog = load_catalog('boutique')\n"
        f"for entry_id in ({ENTRY!r}, 'code-catalog-sale-lookup'):\n"
        "    assert validate_entry(catalog.get(entry_id)).admitted\n"
        "print(json.dumps(sorted(m.__file__ for n, m in sys.modules.items()\n"
        "                        if n.startswith('pytest_marathon') and getattr(m, '__file__', None))))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    package = Path(pytest_marathon.__file__).parent
    inputs = {relative for relative, _file in engine_files("boutique")}
    loaded = {Path(f).resolve() for f in json.loads(done.stdout)}
    package_files = {f.relative_to(package.resolve()).as_posix() for f in loaded
                     if f.is_relative_to(package.resolve())}
    assert package_files and package_files <= inputs, sorted(package_files - inputs)


def test_every_action_module_an_experiment_names_is_an_input() -> None:
    inputs = {relative for relative, _file in engine_files("boutique")}
    named = set()
    for entry in load_catalog("boutique"):
        for step in (entry.experiment or {}).get("method", []):
            module = step.get("provider", {}).get("module", "")
            if module.startswith("pytest_marathon"):
                named.add(module)
    assert named
    for module in named:
        assert module.removeprefix("pytest_marathon.").replace(".", "/") + ".py" in inputs


def test_the_audit_sample_takes_only_current_entries_and_rotates_with_the_engine(
    catalog_copy: Path,
) -> None:
    catalog = load_catalog("boutique", catalog_copy)
    engine = engine_digest("boutique")
    record = _record_all_current(catalog_copy)
    stale = sorted(record)[:100]
    for entry_id in stale:
        record[entry_id] = RecordedVerdict("old inputs", True, ())
    sample = audit_sample(catalog, record, engine, 12)
    assert len(sample) == 12 and not {e.id for e in sample} & set(stale)
    other = "x" * 64
    rotated = {e.id for e in audit_sample(catalog, _record_all_current(catalog_copy, other), other, 12)}
    before = {e.id for e in audit_sample(catalog, _record_all_current(catalog_copy), engine, 12)}
    assert len(rotated) == len(before) == 12 and rotated != before


def test_a_malformed_record_is_named(catalog_copy: Path) -> None:
    (catalog_copy / RECORD_NAME).write_text(json.dumps({"version": 1, "entries": {ENTRY: {}}}))
    with pytest.raises(CatalogError, match=RECORD_NAME):
        load_record("boutique", catalog_copy)


def test_verdicts_measured_while_the_engine_changed_are_not_recorded(catalog_copy: Path) -> None:
    with pytest.raises(CatalogError, match="engine files changed while admission ran"):
        write_record("boutique", [], "digest taken before an edit", root=catalog_copy)
    assert not (catalog_copy / RECORD_NAME).exists()
