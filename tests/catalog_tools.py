"""The catalog generator's modules (`fault_catalog/tools/`, scripts rather than a package) for
tests of the apps' generated catalogs: imported fresh, writing into a copy of an app's shipped
catalog, so a test can regenerate it and compare without touching the checkout."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "fault_catalog" / "tools"
MODULES = ("generate", "generate_boutique", "catalog_common", "code_faults_app", "code_faults", "twin_knowledge")


def generator_tools(app: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, ModuleType]]:
    """Fixture body: `generate` and `code_faults_app`, and `out`, the copy of `app`'s catalog
    `generate` writes into."""
    monkeypatch.syspath_prepend(str(TOOLS))
    for name in MODULES:
        sys.modules.pop(name, None)
    import code_faults_app
    import generate

    out = tmp_path / app
    shutil.copytree(ROOT / "fault_catalog" / app, out)
    monkeypatch.setattr(generate, "out_dir", lambda _app: out)
    yield {"generate": generate, "code_faults_app": code_faults_app, "out": out}  # type: ignore[dict-item]
    for name in MODULES:
        sys.modules.pop(name, None)


def texts(folder: Path) -> dict[str, str]:
    """Every file under `folder` by its relative path."""
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}
