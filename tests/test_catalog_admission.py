"""CI runs admission (paper Appendix C) on every shipped catalog that has an admission record.

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
# current entries re-admitted per app and run, rotating with the inputs: eight per app keeps three
# apps' audits (a Train Ticket entry takes about 27 CPU-seconds) inside the CI budget
AUDIT = 8
# the floor for each app: entries, code faults, services with code faults
MINIMUMS = {"boutique": (150, 30, 8), "astronomy": (220, 40, 10), "trainticket": (220, 40, 15)}
# A catalog with no admission record runs no marathon (marathon_apps.py) and would be admitted here
# in full (every entry stale): it joins once `validate-catalog --write-scope` has written its record.
APPS = tuple(app for app in MINIMUMS if load_record(app))
CATALOGS = {app: load_catalog(app) for app in APPS}
RECORDS = {app: load_record(app) for app in APPS}
STALE = {app: stale_entries(CATALOGS[app], RECORDS[app], engine_digest(app)) for app in APPS}
TO_ADMIT = {
    app: sorted(STALE[app] + audit_sample(CATALOGS[app], RECORDS[app], engine_digest(app), AUDIT),
                key=lambda e: e.id)
    for app in APPS
}


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
@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("index", range(CHUNKS))
def test_every_changed_and_audited_entry_of_the_chunk_is_admitted_with_its_stored_scope(
    app: str, index: int,
) -> None:
    problems = _admit(TO_ADMIT[app][index::CHUNKS])
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("index", range(CHUNKS))
def test_every_entry_of_the_chunk_is_admitted_with_its_stored_scope(app: str, index: int) -> None:
    problems = _admit(list(CATALOGS[app])[index::CHUNKS])
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("app", APPS)
def test_every_unchanged_entry_agrees_with_its_recorded_verdict(app: str) -> None:
    stale = {e.id for e in STALE[app]}
    problems = []
    for entry in CATALOGS[app]:
        row = RECORDS[app].get(entry.id)
        if entry.id in stale or row is None:
            continue
        if not row.admitted:
            problems.append(f"{entry.id}: recorded as rejected: {'; '.join(row.reasons)}")
        elif row.scope != entry.scope:
            problems.append(f"{entry.id}: stored scope {list(entry.scope)} != recorded {list(row.scope)}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("app", APPS)
def test_catalog_meets_the_paper_rules(app: str) -> None:
    entries = list(CATALOGS[app])
    least, least_code, least_services = MINIMUMS[app]
    assert len(entries) >= least
    assert {e.category for e in entries} == set(CATEGORIES)
    code = [e for e in entries if e.category == "code"]
    assert len(code) >= least_code and len({e.target for e in code}) >= least_services
    assert sum(e.remedy is None for e in entries) / len(entries) <= MAX_NO_REMEDY_SHARE
    assert all(e.scope for e in entries), "every entry stores its measured scope"
