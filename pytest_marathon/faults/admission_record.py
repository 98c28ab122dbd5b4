"""What admission last measured for each catalog entry, and on which inputs.

Admitting one entry is a deterministic function of the entry, the code that runs it (the twin
engine, the app's service code, the rule pack, the admission timeline) and the interpreter: the
twin is seeded and every trial starts fresh. So a verdict stays true for as long as those inputs
are unchanged, and a check need not re-run it. The record (`admission-record.json` beside the
entries) keeps, per entry, the SHA-256 of its inputs with the verdict and the scope measured on
them. An entry is *stale* when its current inputs digest differs from the recorded one (or it has
no row); only stale entries need admission again.

What counts as an input errs wide, because a missed input would let a stale verdict pass as
current: every module of the package that admission can import (the closure of every `import`
statement, top level or inside functions, from the admission module and the Chaos Toolkit action
module experiments name), every data file of the package except other apps' twins and rule
packs, the fault catalog (entries are hashed one by one, parsed, without the scope admission
writes) and the agents and docs, plus the Python version and the versions of the libraries the
twin executes through. A change to the engine therefore makes every entry stale; a change to
the scorer, the plugin, the CLI or the reports does not.

A record can still lie (edited by hand, or an input the digest misses), so checks also re-run an
audit sample of current entries and compare (`audit_sample`): the sample is drawn by the inputs
digests, so it rotates with every change of the engine or the catalog.
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from importlib import metadata, resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from pytest_marathon.alerting.rules import available_packs, rule_pack_files
from pytest_marathon.faults.catalog import (
    Catalog,
    CatalogEntry,
    CatalogError,
    catalog_root,
    load_catalog,
)

RECORD_NAME = "admission-record.json"
RECORD_VERSION = 1
#: Libraries whose behaviour the trial executes through (the service code runs under
#: RestrictedPython; entries and app definitions are parsed by PyYAML).
_LIBRARIES = ("RestrictedPython", "PyYAML")
#: Subpackages of pytest_marathon that are not admission inputs (mapped folders in setup.cfg).
_NOT_INPUTS = ("fault_catalog", "agents", "docs", "scenarios")
#: Where a trial's code starts: the admission module, and the module Chaos Toolkit loads by name
#: for the experiments of direct faults.
ADMISSION_ROOTS = ("pytest_marathon.faults.admission", "pytest_marathon.faults.chaos_actions")


@dataclass(frozen=True)
class RecordedVerdict:
    """One entry's row: the digest of the inputs it was admitted on and what admission said."""

    inputs: str
    admitted: bool
    scope: tuple[str, ...]
    reasons: tuple[str, ...] = ()


def _files(folder: Traversable, prefix: str, skip: frozenset[str]) -> Iterator[tuple[str, Traversable]]:
    for item in sorted(folder.iterdir(), key=lambda t: t.name):
        relative = f"{prefix}{item.name}"
        if item.name == "__pycache__" or relative in skip:
            continue
        if item.is_dir():
            yield from _files(item, relative + "/", skip)
        elif item.is_file() and not item.name.endswith((".pyc", ".pyo")):
            yield relative, item


def _module_path(module: str) -> str | None:
    """`pytest_marathon.a.b` as a path relative to the package, if it is a module of it."""
    package = resources.files("pytest_marathon")
    parts = module.split(".")[1:]
    if package.joinpath(*parts, "__init__.py").is_file():
        return "/".join([*parts, "__init__.py"])
    if parts and package.joinpath(*parts[:-1], f"{parts[-1]}.py").is_file():
        return "/".join(parts) + ".py"
    return None


def import_closure(roots: Iterable[str] = ADMISSION_ROOTS) -> set[str]:
    """Relative paths of the package modules the roots can import, statically: every import
    statement counts, wherever it stands, so a branch a trial rarely takes is covered too."""
    package = resources.files("pytest_marathon")
    found: set[str] = set()
    stack = list(roots)
    seen: set[str] = set()
    while stack:
        module = stack.pop()
        if module in seen or not module.startswith("pytest_marathon"):
            continue
        seen.add(module)
        path = _module_path(module)
        if path is None:
            continue
        found.add(path)
        parts = module.split(".")
        stack += [".".join(parts[:i]) for i in range(1, len(parts))]  # parents run first
        here = module if path.endswith("__init__.py") else ".".join(parts[:-1])
        tree = ast.parse(package.joinpath(*path.split("/")).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                stack += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                stack.append(base)
                stack += [f"{base}.{alias.name}" for alias in node.names]
    return found


def engine_files(app: str) -> list[tuple[str, Traversable]]:
    """Every file of the installed package an admission of `app` may run, by relative path: the
    modules of the import closure and the data files (the app's service code is data)."""
    package = resources.files("pytest_marathon")
    apps = package.joinpath("twin", "apps")
    others = {f"twin/apps/{item.name}" for item in apps.iterdir()
              if item.is_dir() and item.name not in {app, "__pycache__"}}
    # a trial reads only its own app's rule pack; another app's pack files (as `rule_pack_files`
    # names them, under alerting/) are data it never reads, as another app's service code is
    other_packs = {f"alerting/{source}" for name in available_packs() if name != app
                   for source, _file in rule_pack_files(name)}
    skip = frozenset(others | other_packs | set(_NOT_INPUTS))
    modules = import_closure()
    service_code = f"twin/apps/{app}/"
    files = [(relative, file) for relative, file in _files(package, "", skip)
             if not relative.endswith(".py") or relative in modules
             or relative.startswith(service_code)]
    files += _files(resources.files("pytest_marathon.scenarios"), "scenarios/", frozenset())
    return files


def engine_digest(app: str) -> str:
    """SHA-256 over the engine files, the interpreter's version and the executing libraries."""
    outer = hashlib.sha256()
    outer.update(f"python {sys.version_info.major}.{sys.version_info.minor}\n".encode())
    for library in _LIBRARIES:
        outer.update(f"{library} {metadata.version(library)}\n".encode())
    for relative, file in engine_files(app):
        outer.update(f"{relative}:{hashlib.sha256(file.read_bytes()).hexdigest()}\n".encode())
    return outer.hexdigest()


def entry_inputs(entry: CatalogEntry, engine: str) -> str:
    """Digest of one entry's admission inputs: the engine digest and the parsed entry (its patch
    and experiment included) without the scope admission itself writes, or where it was read."""
    fields = asdict(entry)
    fields.pop("scope")
    fields.pop("source")
    text = json.dumps(fields, sort_keys=True, default=repr)
    return hashlib.sha256(f"{engine}\n{text}".encode()).hexdigest()


def record_path(app: str, root: str | Path | None = None) -> Path | Traversable:
    folder: Path | Traversable = Path(root) if root is not None else catalog_root(app)
    return folder.joinpath(RECORD_NAME)


def load_record(app: str, root: str | Path | None = None) -> dict[str, RecordedVerdict]:
    """The recorded rows by entry id (none when there is no record yet)."""
    path = record_path(app, root)
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != RECORD_VERSION:
            raise ValueError(f"version {data.get('version')!r}, expected {RECORD_VERSION}")
        return {
            entry_id: RecordedVerdict(
                str(row["inputs"]), bool(row["admitted"]), tuple(row["scope"]),
                tuple(row.get("reasons", ())),
            )
            for entry_id, row in data["entries"].items()
        }
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CatalogError(f"{path}: not an admission record: {exc}") from None


def stale_entries(catalog: Catalog, record: dict[str, RecordedVerdict],
                  engine: str) -> list[CatalogEntry]:
    """Entries whose inputs changed since their row was written, or that have no row."""
    return [e for e in catalog
            if (row := record.get(e.id)) is None or row.inputs != entry_inputs(e, engine)]


def audit_sample(catalog: Catalog, record: dict[str, RecordedVerdict], engine: str,
                 size: int) -> list[CatalogEntry]:
    """`size` current (not stale) entries to re-run anyway, drawn by their inputs digests."""
    stale = {e.id for e in stale_entries(catalog, record, engine)}
    current = [e for e in catalog if e.id not in stale]
    current.sort(key=lambda e: hashlib.sha256(f"audit {entry_inputs(e, engine)}".encode()).digest())
    return sorted(current[:size], key=lambda e: e.id)


def write_record(app: str, verdicts: Iterable[Any], engine: str,
                 root: str | Path | None = None) -> Path:
    """Store the verdicts just measured on `engine` (the digest taken before they were), each
    against its entry's inputs as the catalog now reads them; rows of other entries are kept,
    rows of entries the catalog no longer has are dropped. If the engine files changed while
    the verdicts were measured, nothing is written: they may belong to either version."""
    path = record_path(app, root)
    if not isinstance(path, Path):
        path = Path(str(path))
    if engine_digest(app) != engine:
        raise CatalogError("the engine files changed while admission ran; the admission record "
                           "was not written (run validate-catalog again)")
    by_id = {e.id: e for e in load_catalog(app, root)}
    rows = {k: v for k, v in load_record(app, root).items() if k in by_id}
    for verdict in verdicts:
        entry = by_id[verdict.entry_id]
        rows[verdict.entry_id] = RecordedVerdict(
            entry_inputs(entry, engine), bool(verdict.admitted),
            tuple(verdict.scope), tuple(verdict.reasons),
        )
    document = {
        "version": RECORD_VERSION,
        "about": "admission verdicts by inputs digest (pytest_marathon/faults/admission_record.py); "
                 "written by `pytest-marathon validate-catalog --write-scope`",
        "entries": {
            entry_id: {"inputs": row.inputs, "admitted": row.admitted, "scope": list(row.scope),
                       **({"reasons": list(row.reasons)} if row.reasons else {})}
            for entry_id, row in sorted(rows.items())
        },
    }
    path.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return path
