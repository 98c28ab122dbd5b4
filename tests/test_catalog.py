"""The catalog format: the shipped entries load, malformed ones are refused naming file and field,
and nothing an agent could eventually read gives a fault away."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from pytest_marathon.faults.catalog import (
    CATEGORIES,
    GIVEAWAY,
    CatalogError,
    catalog_root,
    load_catalog,
)
from pytest_marathon.faults.chaos import validate_experiment

SHIPPED = Path(str(catalog_root("boutique")))


@pytest.fixture(scope="module")
def catalog():
    return load_catalog("boutique")


def test_shipped_catalog_covers_every_category_with_enough_code_faults(catalog):
    counts = Counter(e.category for e in catalog)
    assert set(counts) == set(CATEGORIES)
    code = [e for e in catalog if e.category == "code"]
    assert len(code) >= 30 and len({e.target for e in code}) >= 8


def test_shipped_catalog_holds_at_least_150_faults(catalog):
    assert len(catalog) >= 150


def test_no_more_than_fifteen_percent_have_no_remedy(catalog):
    assert sum(e.remedy is None for e in catalog) / len(catalog) <= 0.15


def test_direct_faults_are_valid_chaos_toolkit_experiments(catalog):
    direct = [e for e in catalog if e.mechanism == "direct"]
    assert direct
    for entry in direct:
        validate_experiment(entry.experiment)


def test_code_faults_are_unified_diffs_with_an_intended_update(catalog):
    for entry in (e for e in catalog if e.category == "code"):
        assert entry.patch.startswith("--- ") and "\n+++ " in entry.patch and "\n@@ " in entry.patch
        assert entry.update and entry.defect and entry.exposed_by


def test_nothing_visible_names_the_fault(catalog):
    """Deployed patch lines, image tags, revision notes (change causes), changed values and log
    lines never say bug/fault/inject nor carry a catalog id."""
    ids = [e.id for e in catalog]
    for entry in catalog:
        for text in entry.visible_texts:
            assert not GIVEAWAY.search(text), (entry.id, text)
            assert not any(i in text for i in ids), (entry.id, text)
    # the check is not vacuous: the words it looks for are caught in ordinary phrasing
    assert GIVEAWAY.search("Fix bug in cart") and not GIVEAWAY.search("use the default port")


def copy_entry(tmp_path: Path, entry_id: str) -> Path:
    for sub in ("patches", "experiments"):
        shutil.copytree(SHIPPED / sub, tmp_path / sub, dirs_exist_ok=True)
    target = tmp_path / f"{entry_id}.yaml"
    shutil.copy(SHIPPED / f"{entry_id}.yaml", target)
    return target


def first_entry(catalog, **match):
    return next(e for e in catalog if all(getattr(e, k) == v for k, v in match.items()))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("category", "network", r"field 'category'"),
        ("mechanism", "sideways", r"field 'mechanism'"),
        ("artifact", "the cart", r"field 'artifact'.*vocabulary"),
        ("remedy", [{"tool": "delete_namespace"}], r"field 'remedy'"),
        ("probe", {"kind": "vibes"}, r"field 'probe'"),
        ("log", {"service": "frontend"}, r"field 'log'"),
        ("change_cause", "Fix the injected fault", r"gives the fault away"),
        ("surprise", 1, r"field 'surprise': unknown field"),
    ],
)
def test_malformed_entry_names_file_and_field(catalog, tmp_path, field, value, message):
    entry = first_entry(catalog, mechanism="change")
    path = copy_entry(tmp_path, entry.id)
    data = yaml.safe_load(path.read_text())
    data[field] = value
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CatalogError, match=re.escape(f"boutique/{entry.id}.yaml") + ".*" + message):
        load_catalog("boutique", tmp_path)


def test_missing_patch_file_and_missing_field_are_named(catalog, tmp_path):
    entry = first_entry(catalog, category="code")
    path = copy_entry(tmp_path, entry.id)
    (tmp_path / "patches").joinpath(
        Path(yaml.safe_load(path.read_text())["injection"]["patch"]).name
    ).unlink()
    with pytest.raises(CatalogError, match=r"field 'injection.patch'.*not found"):
        load_catalog("boutique", tmp_path)
    shutil.copytree(SHIPPED / "patches", tmp_path / "patches", dirs_exist_ok=True)
    data = yaml.safe_load(path.read_text())
    del data["target"]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CatalogError, match=r"field 'target'"):
        load_catalog("boutique", tmp_path)


def test_unknown_app_is_a_clear_error(tmp_path):
    with pytest.raises(CatalogError, match="no fault catalog for app 'nowhere'"):
        load_catalog("nowhere")
