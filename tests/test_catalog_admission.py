"""CI runs admission (paper Appendix C) on the whole shipped boutique catalog.

The catalog is split into chunks so `pytest -n 2` spreads them over its workers; each chunk's
entries must be admitted and must store the affected scope admission measures (the scorer and
the oracle attribute alerts through it). One more test holds the catalog-level rules.
"""

from __future__ import annotations

import pytest

from pytest_marathon.faults.admission import MAX_NO_REMEDY_SHARE, validate_entry
from pytest_marathon.faults.catalog import CATEGORIES, load_catalog

CHUNKS = 10
CATALOG = load_catalog("boutique")


def _chunk(index: int) -> list:
    return list(CATALOG)[index::CHUNKS]


@pytest.mark.heavy
@pytest.mark.parametrize("index", range(CHUNKS))
def test_every_entry_of_the_chunk_is_admitted_with_its_stored_scope(index: int) -> None:
    problems = []
    for entry in _chunk(index):
        verdict = validate_entry(entry)
        if not verdict.admitted:
            problems.append(f"{entry.id}: rejected: {'; '.join(verdict.reasons)}")
        elif tuple(verdict.scope) != entry.scope:
            problems.append(f"{entry.id}: stored scope {list(entry.scope)} != measured {verdict.scope}")
    assert not problems, "\n".join(problems)


def test_catalog_meets_the_paper_rules() -> None:
    entries = list(CATALOG)
    assert len(entries) >= 150
    assert {e.category for e in entries} == set(CATEGORIES)
    code = [e for e in entries if e.category == "code"]
    assert len(code) >= 30 and len({e.target for e in code}) >= 8
    assert sum(e.remedy is None for e in entries) / len(entries) <= MAX_NO_REMEDY_SHARE
    assert all(e.scope for e in entries), "every entry stores its measured scope"
