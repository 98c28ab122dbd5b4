"""CI runs admission (paper Appendix C) on the shipped boutique catalog.

Admission is deterministic in its inputs (faults/admission_record.py), so the default run admits
again only the entries whose inputs changed since the admission record, plus an audit sample of
the others that must reproduce their recorded verdict and scope; every other entry must agree
with its row. The slow run (`-m slow`) admits every entry. The work is split into chunks so
`pytest -n 2` spreads it over its workers; each admitted entry must store the affected scope
admission measures (the scorer and the oracle attribute alerts through it). One more test holds
the catalog-level rules.
"""

from __future__ import annotations

import pytest

from pytest_marathon.faults.admission import MAX_NO_REMEDY_SHARE, validate_entry
from pytest_marathon.faults.admission_record import (
    audit_sample,
    engine_digest,
    load_record,
    stale_entries,
)
from pytest_marathon.faults.catalog import CATEGORIES, load_catalog

CHUNKS = 10
AUDIT = 12
CATALOG = load_catalog("boutique")
RECORD = load_record("boutique")
ENGINE = engine_digest("boutique")
STALE = stale_entries(CATALOG, RECORD, ENGINE)
TO_ADMIT = sorted(STALE + audit_sample(CATALOG, RECORD, ENGINE, AUDIT), key=lambda e: e.id)


def _admit(entries: list) -> list[str]:
    problems = []
    for entry in entries:
        verdict = validate_entry(entry)
        if not verdict.admitted:
            problems.append(f"{entry.id}: rejected: {'; '.join(verdict.reasons)}")
        elif tuple(verdict.scope) != entry.scope:
            problems.append(f"{entry.id}: stored scope {list(entry.scope)} != measured {verdict.scope}")
    return problems


@pytest.mark.heavy
@pytest.mark.parametrize("index", range(CHUNKS))
def test_every_changed_and_audited_entry_of_the_chunk_is_admitted_with_its_stored_scope(
    index: int,
) -> None:
    problems = _admit(TO_ADMIT[index::CHUNKS])
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.parametrize("index", range(CHUNKS))
def test_every_entry_of_the_chunk_is_admitted_with_its_stored_scope(index: int) -> None:
    problems = _admit(list(CATALOG)[index::CHUNKS])
    assert not problems, "\n".join(problems)


def test_every_unchanged_entry_agrees_with_its_recorded_verdict() -> None:
    stale = {e.id for e in STALE}
    problems = []
    for entry in CATALOG:
        row = RECORD.get(entry.id)
        if entry.id in stale or row is None:
            continue
        if not row.admitted:
            problems.append(f"{entry.id}: recorded as rejected: {'; '.join(row.reasons)}")
        elif row.scope != entry.scope:
            problems.append(f"{entry.id}: stored scope {list(entry.scope)} != recorded {list(row.scope)}")
    assert not problems, "\n".join(problems)


def test_catalog_meets_the_paper_rules() -> None:
    entries = list(CATALOG)
    assert len(entries) >= 150
    assert {e.category for e in entries} == set(CATEGORIES)
    code = [e for e in entries if e.category == "code"]
    assert len(code) >= 30 and len({e.target for e in code}) >= 8
    assert sum(e.remedy is None for e in entries) / len(entries) <= MAX_NO_REMEDY_SHARE
    assert all(e.scope for e in entries), "every entry stores its measured scope"
