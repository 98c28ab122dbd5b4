"""The fault catalog: one YAML file per fault, validated into `CatalogEntry` records.

The catalog is the benchmark's hidden ground truth (paper §2, Appendix C). Validation is strict
and names the file and the field, because a silently wrong entry corrupts every score computed
against it. Patches and Chaos Toolkit experiments live next to the entries and are read here, so
the orchestrator receives entries that are ready to inject.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml

from pytest_marathon import yamlio
from pytest_marathon.vocabulary import CATEGORIES

MECHANISMS = ("change", "direct")
PROBE_KINDS = ("request", "rpc", "deployment_ready", "no_error_logs")
REMEDY_TOOLS = (
    "restart_service",
    "scale_service",
    "rollback_service",
    "update_config",
    "set_feature_flag",
    "submit_patch",
)
# Canonical artifact vocabulary (ARCHITECTURE.md §6): the scorer normalises aliases onto these.
_ARTIFACT = re.compile(
    r"^(code:[a-z0-9-]+/[\w./-]+|image:[a-z0-9-]+|env:[a-z0-9-]+/[A-Z0-9_]+"
    r"|limits:[a-z0-9-]+/(cpu|memory)|replicas:[a-z0-9-]+|flag:[\w.-]+|secret:[\w.-]+"
    r"|probe:[a-z0-9-]+/(readiness|liveness|startup)|node:[\w.-]+|network:[a-z0-9-]+"
    r"|pod:[a-z0-9-]+)$"
)
_INJECTION_KEYS = {"patch", "env", "resources", "image", "probes", "strategy", "experiment"}
_CHANGE_KEYS = {"patch", "env", "resources", "image", "probes", "strategy"}
_STRATEGY_TYPES = ("Recreate", "RollingUpdate")
# Words that would tell an agent a change is planted. Checked on everything it can see.
GIVEAWAY = re.compile(
    r"\b(bugs?|buggy|faults?|faulty|inject\w*|chaos\w*|benchmark\w*|marathon)\b", re.IGNORECASE
)


class CatalogError(ValueError):
    """A malformed catalog entry; the message names the file and the field."""


@dataclass(frozen=True)
class CatalogEntry:
    """One admitted (or candidate) fault with its hidden ground truth."""

    id: str
    app: str
    category: str
    mechanism: str
    target: str
    culprits: tuple[str, ...]
    probe: Mapping[str, Any]
    artifact: str
    aliases: tuple[str, ...]
    scope: tuple[str, ...]
    log_service: str
    log_message: str
    recovery: str
    remedy: tuple[Mapping[str, Any], ...] | None
    change_cause: str = ""
    update: str = ""
    defect: str = ""
    exposed_by: tuple[str, ...] = ()
    patch: str | None = None
    env: Mapping[str, str | None] = field(default_factory=dict)
    resources: Mapping[str, str] = field(default_factory=dict)
    image: str | None = None
    probes: Mapping[str, Any] = field(default_factory=dict)
    strategy: Mapping[str, Any] | None = None
    experiment: Mapping[str, Any] | None = None
    source: str = ""

    @property
    def holds(self) -> frozenset[str]:
        """What this fault takes over while active. Two faults holding the same thing must not
        overlap: the revert of one would undo the other (a code patch and an image tag both
        hold the service's image)."""
        held = {self.artifact}
        if self.patch is not None or self.image is not None:
            held.add(f"image:{self.target}")
        held.update(f"env:{self.target}/{var}" for var in self.env)
        held.update(f"limits:{self.target}/{key.rsplit('.', 1)[-1]}" for key in self.resources)
        held.update(f"probe:{self.target}/{kind}" for kind in self.probes)
        if self.strategy is not None:
            held.add(f"strategy:{self.target}")
        return frozenset(held)

    @property
    def visible_texts(self) -> list[str]:
        """Everything of this entry an agent could eventually read in the live system."""
        texts = [self.change_cause, self.log_message]
        if self.patch:
            texts += [line[1:] for line in self.patch.splitlines() if line.startswith("+")]
        if self.image:
            texts.append(self.image)
        texts += [str(v) for v in self.env.values() if v is not None]
        return texts


@dataclass(frozen=True)
class Catalog:
    """The entries of one app, sorted by id (the order every seeded draw relies on)."""

    app: str
    entries: tuple[CatalogEntry, ...]

    def __iter__(self) -> Iterator[CatalogEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, entry_id: str) -> CatalogEntry:
        for entry in self.entries:
            if entry.id == entry_id:
                return entry
        raise KeyError(f"no catalog entry {entry_id!r} for app {self.app!r}")

    def categories(self) -> list[str]:
        """Categories the app supports, in the canonical order."""
        present = {e.category for e in self.entries}
        return [c for c in CATEGORIES if c in present]

    def only(self, ids: list[str]) -> Catalog:
        return Catalog(self.app, tuple(self.get(i) for i in sorted(set(ids))))


def catalog_root(app: str) -> Traversable:
    """Where the shipped catalog of an app lives (inside the installed package)."""
    return resources.files("pytest_marathon.fault_catalog").joinpath(app)


#: Folders next to the entries whose files entries refer to (`injection.patch`, `.experiment`).
SIBLING_FOLDERS = ("patches", "experiments")


def catalog_files(app: str, root: str | Path | None = None) -> list[tuple[str, Traversable | Path]]:
    """Every file the catalog of `app` is made of, as (path relative to the catalog, file),
    sorted by path: the entries `load_catalog` parses and the patches and experiments they may
    read. A bundle's manifest records their digest, so a changed entry is a different run."""
    folder: Traversable | Path = Path(root) if root is not None else catalog_root(app)
    if not folder.is_dir():
        raise CatalogError(f"{folder}: no fault catalog for app {app!r}")
    found = [(item.name, item) for item in folder.iterdir() if _is_entry(item)]
    for name in SIBLING_FOLDERS:
        sub = folder.joinpath(name)
        if sub.is_dir():
            found.extend(_walk(sub, name))
    return sorted(found, key=lambda pair: pair[0])


def _walk(folder: Traversable | Path, prefix: str) -> list[tuple[str, Traversable | Path]]:
    files = []
    for item in folder.iterdir():
        relative = f"{prefix}/{item.name}"
        if item.is_dir():
            files.extend(_walk(item, relative))
        elif item.is_file():
            files.append((relative, item))
    return files


#: Authoring data next to the entries that is not an entry: what the catalog generator knows of
#: the app (fault_catalog/tools/generate.py).
AUTHORING_FILES = ("generator.yaml",)


def _is_entry(item: Traversable | Path) -> bool:
    """Which files of the catalog folder are entries (one rule for the loader and the digest)."""
    return item.name.endswith(".yaml") and item.name not in AUTHORING_FILES


def load_catalog(app: str, root: str | Path | None = None) -> Catalog:
    """All entries of an app; `root` overrides the shipped folder (tests, authoring)."""
    folder: Traversable | Path = Path(root) if root is not None else catalog_root(app)
    if not folder.is_dir():
        raise CatalogError(f"{folder}: no fault catalog for app {app!r}")
    entries: list[CatalogEntry] = []
    problems: list[str] = []
    for item in sorted(folder.iterdir(), key=lambda p: p.name):
        if not _is_entry(item):
            continue
        try:
            entries.append(load_entry(item, app=app))
        except CatalogError as exc:  # every broken entry is named, not just the first
            problems.append(str(exc))
    if problems:
        raise CatalogError(
            f"{len(problems)} invalid catalog {'entry' if len(problems) == 1 else 'entries'} "
            f"in {folder}:\n" + "\n".join(f"  {problem}" for problem in problems)
        )
    ids = [e.id for e in entries]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise CatalogError(f"{folder}: duplicate entry id {duplicates[0]!r}")
    return Catalog(app, tuple(sorted(entries, key=lambda e: e.id)))


def load_entry(path: Traversable | Path, *, app: str) -> CatalogEntry:
    """Parse and validate one entry file (its patch or experiment is read alongside)."""
    source = f"{app}/{path.name}"
    try:
        data = yamlio.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise CatalogError(f"{source}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise CatalogError(f"{source}: expected a mapping of entry fields")
    return _Parser(data, source, path).entry(app)


class _Parser:
    def __init__(self, data: dict[str, Any], source: str, path: Traversable | Path) -> None:
        self.data = data
        self.source = source
        self.path = path

    def fail(self, field_name: str, problem: str) -> CatalogError:
        return CatalogError(f"{self.source}: field {field_name!r}: {problem}")

    def text(self, name: str, *, required: bool = True) -> str:
        value = self.data.get(name)
        if value is None and not required:
            return ""
        if not isinstance(value, str) or not value.strip():
            raise self.fail(name, "must be a non-empty string")
        return value.strip()

    def names(self, name: str, *, required: bool = True) -> tuple[str, ...]:
        value = self.data.get(name)
        if value is None and not required:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(name, "must be a list of strings")
        if required and not value:
            raise self.fail(name, "must not be empty")
        return tuple(sorted(set(value)))

    def entry(self, app: str) -> CatalogEntry:
        unknown = sorted(set(self.data) - _ENTRY_FIELDS)
        if unknown:
            raise self.fail(unknown[0], "unknown field")
        entry_id = self.text("id")
        if self.path.name != f"{entry_id}.yaml":
            raise self.fail("id", f"must match the file name ({self.path.name})")
        category = self.text("category")
        if category not in CATEGORIES:
            raise self.fail("category", f"{category!r} is not one of {', '.join(CATEGORIES)}")
        mechanism = self.text("mechanism")
        if mechanism not in MECHANISMS:
            raise self.fail("mechanism", f"{mechanism!r} is not 'change' or 'direct'")
        artifact = self.text("artifact")
        aliases = self.names("aliases", required=False)
        for name, value in [("artifact", artifact)] + [("aliases", a) for a in aliases]:
            if not _ARTIFACT.match(value):
                raise self.fail(name, f"{value!r} is not in the artifact vocabulary")
        log = self.data.get("log")
        if not isinstance(log, dict) or not all(
            isinstance(log.get(k), str) and log.get(k) for k in ("service", "message")
        ):
            raise self.fail("log", "must be a mapping with 'service' and 'message'")
        injection = self.injection(category, mechanism)
        entry = CatalogEntry(
            id=entry_id,
            app=app,
            category=category,
            mechanism=mechanism,
            target=self.text("target"),
            culprits=self.names("culprits"),
            probe=self.probe(),
            artifact=artifact,
            aliases=aliases,
            scope=self.names("scope", required=False),
            log_service=log["service"],
            log_message=log["message"],
            recovery=self.text("recovery"),
            remedy=self.remedy(),
            change_cause=self.text("change_cause", required=mechanism == "change"),
            update=self.text("update", required=category == "code"),
            defect=self.text("defect", required=category == "code"),
            exposed_by=self.names("exposed_by", required=False),
            source=self.source,
            **injection,
        )
        if entry.target not in entry.culprits:
            raise self.fail("culprits", f"must include the target {entry.target!r}")
        for text in entry.visible_texts:
            if GIVEAWAY.search(text) or entry_id in text:
                raise self.fail("injection", f"visible text gives the fault away: {text[:80]!r}")
        return entry

    def probe(self) -> dict[str, Any]:
        probe = self.data.get("probe")
        if not isinstance(probe, dict) or probe.get("kind") not in PROBE_KINDS:
            raise self.fail("probe", f"must be a mapping whose 'kind' is one of {PROBE_KINDS}")
        return probe

    def remedy(self) -> tuple[Mapping[str, Any], ...] | None:
        remedy = self.data.get("remedy")
        if remedy == "none":
            return None
        if not isinstance(remedy, list) or not remedy:
            raise self.fail("remedy", "must be 'none' or a non-empty list of tool calls")
        for step in remedy:
            if not isinstance(step, dict) or step.get("tool") not in REMEDY_TOOLS:
                raise self.fail("remedy", f"each step needs 'tool' in {REMEDY_TOOLS}")
            if not isinstance(step.get("args", {}), dict):
                raise self.fail("remedy", "'args' must be a mapping")
        return tuple(remedy)

    def injection(self, category: str, mechanism: str) -> dict[str, Any]:
        spec = self.data.get("injection")
        if not isinstance(spec, dict) or not spec:
            raise self.fail("injection", "must be a mapping")
        keys = set(spec)
        if keys - _INJECTION_KEYS:
            raise self.fail("injection", f"unknown key {sorted(keys - _INJECTION_KEYS)[0]!r}")
        if mechanism == "direct" and keys != {"experiment"}:
            raise self.fail("injection", "a direct fault is exactly one 'experiment' file")
        if mechanism == "change" and not keys <= _CHANGE_KEYS:
            raise self.fail("injection", "a change is a patch, env, resources, image, probes or strategy")
        if category == "code" and "patch" not in keys:
            raise self.fail("injection", "a code fault needs a 'patch' file")
        out: dict[str, Any] = {}
        if "patch" in spec:
            out["patch"] = self.sibling("injection.patch", spec["patch"], "patches/")
        if "experiment" in spec:
            text = self.sibling("injection.experiment", spec["experiment"], "experiments/")
            try:
                out["experiment"] = json.loads(text)
            except json.JSONDecodeError as exc:
                raise self.fail("injection.experiment", f"not valid JSON: {exc}") from exc
            if not isinstance(out["experiment"].get("method"), list):
                raise self.fail("injection.experiment", "Chaos Toolkit experiment needs 'method'")
        for key in ("env", "resources", "probes"):
            if key in spec:
                if not isinstance(spec[key], dict) or not spec[key]:
                    raise self.fail(f"injection.{key}", "must be a non-empty mapping")
                out[key] = {
                    str(k): (None if v is None else v if key == "probes" else str(v))
                    for k, v in spec[key].items()
                }
        if "image" in spec:
            if not isinstance(spec["image"], str) or ":" not in spec["image"]:
                raise self.fail("injection.image", "must be an image reference with a tag")
            out["image"] = spec["image"]
        if "strategy" in spec:
            strategy = spec["strategy"]
            if not isinstance(strategy, dict) or strategy.get("type") not in _STRATEGY_TYPES:
                raise self.fail("injection.strategy", f"must be a mapping with 'type' in {_STRATEGY_TYPES}")
            out["strategy"] = dict(strategy)
        return out

    def sibling(self, field_name: str, relative: Any, folder: str) -> str:
        if not isinstance(relative, str) or not relative.startswith(folder) or ".." in relative:
            raise self.fail(field_name, f"must be a file under {folder}")
        target = self.path.parent
        for part in relative.split("/"):
            target = target.joinpath(part)
        if not target.is_file():
            raise self.fail(field_name, f"file {relative} not found")
        return target.read_text(encoding="utf-8")


_ENTRY_FIELDS = {
    "id",
    "category",
    "mechanism",
    "target",
    "culprits",
    "probe",
    "artifact",
    "aliases",
    "scope",
    "log",
    "recovery",
    "remedy",
    "change_cause",
    "update",
    "defect",
    "exposed_by",
    "injection",
}
