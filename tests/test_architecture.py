"""The import rules of ARCHITECTURE.md section 3, checked on the source.

They are what keeps ground truth away from agents and the scorer honest: a path from the tools
to the catalog, or from the scorer to the live system, would be a silent way to cheat.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import pytest_marathon.agents

import pytest_marathon

PACKAGE = Path(pytest_marathon.__file__).parent
AGENTS = Path(pytest_marathon.agents.__file__).parent


def imported_modules(folder: Path) -> dict[str, set[str]]:
    """Every absolute module a folder's Python files import, per file."""
    found: dict[str, set[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        if "services" in path.parts:  # twin service code is sandboxed application code
            continue
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
        found[str(path.relative_to(folder.parent))] = names
    return found


def offenders(folder: Path, banned: tuple[str, ...]) -> list[str]:
    return [
        f"{path} imports {name}"
        for path, names in imported_modules(folder).items()
        for name in sorted(names)
        if any(name == b or name.startswith(b + ".") for b in banned)
    ]


@pytest.mark.parametrize(
    ("folder", "banned"),
    [
        (PACKAGE / "scoring", ("pytest_marathon.twin", "pytest_marathon.backends",
                               "pytest_marathon.runner", "pytest_marathon.run")),
        (PACKAGE / "interface", ("pytest_marathon.faults", "pytest_marathon.fault_catalog")),
        (PACKAGE / "twin", ("pytest_marathon.agents", "pytest_marathon.scoring",
                            "pytest_marathon.plugin", "pytest_marathon.runner", "pytest",
                            "pytest_marathon.faults", "pytest_marathon.interface")),
        (AGENTS, ("pytest_marathon.faults", "pytest_marathon.fault_catalog",
                  "pytest_marathon.twin", "pytest_marathon.backends")),
        (PACKAGE / "isolation", ("pytest_marathon.faults", "pytest_marathon.fault_catalog",
                                 "pytest_marathon.twin", "pytest_marathon.backends",
                                 "pytest_marathon.runner", "pytest_marathon.bundle")),
        (PACKAGE / "metering", ("pytest_marathon.faults", "pytest_marathon.fault_catalog",
                                "pytest_marathon.twin", "pytest_marathon.backends",
                                "pytest_marathon.runner", "pytest_marathon.bundle")),
        (PACKAGE / "apiserver", ("pytest_marathon.faults", "pytest_marathon.fault_catalog",
                                 "pytest_marathon.scoring", "pytest_marathon.runner")),
    ],
    ids=["scoring-reads-only-bundles", "tools-never-reach-ground-truth",
         "twin-knows-nothing-of-agents", "agents-use-only-the-interface",
         "isolation-holds-no-ground-truth", "metering-sees-only-model-calls",
         "apiserver-serves-only-the-live-system"],
)
def test_import_rules_hold(folder: Path, banned: tuple[str, ...]) -> None:
    assert imported_modules(folder), f"no Python files found under {folder}"
    assert offenders(folder, banned) == []


def test_no_top_level_agents_package_is_installed() -> None:
    """The agents folder ships as pytest_marathon.agents, never as a colliding `agents`."""
    assert pytest_marathon.agents.__name__ == "pytest_marathon.agents"
    assert (AGENTS / "runbook_table.yaml").is_file()


def test_every_package_ships_in_a_plain_install() -> None:
    """`pip install .` (the README's first command) installs only the packages setup.cfg lists:
    a package folder missing there imports in an editable checkout and fails in a user's install."""
    import configparser

    root = Path(__file__).resolve().parent.parent
    config = configparser.ConfigParser()
    config.read(root / "setup.cfg")
    listed = {line.strip() for line in config["options"]["packages"].splitlines() if line.strip()}
    folders = {".".join(init.parent.relative_to(root).parts)
               for init in (root / "pytest_marathon").rglob("__init__.py")
               if init.parent.relative_to(root / "pytest_marathon").parts[:2] != ("twin", "apps")
               or len(init.parent.relative_to(root / "pytest_marathon").parts) == 2}
    assert folders - listed == set()


def test_every_app_file_ships_in_a_plain_install() -> None:
    """A twin app is data plus service code under `twin/apps/<app>/`: every file there must match
    setup.cfg's package data, or `pip install .` leaves it out (an app's shared sources, its
    database init scripts) and the app fails in a user's install while the editable checkout works."""
    import configparser
    from fnmatch import fnmatchcase

    root = Path(__file__).resolve().parent.parent
    config = configparser.ConfigParser()
    config.read(root / "setup.cfg")
    patterns = [p.strip() for p in config["options.package_data"]["pytest_marathon.twin.apps"].split(",")]
    apps = root / "pytest_marathon" / "twin" / "apps"
    files = [p.relative_to(apps).as_posix() for p in apps.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]
    # a pattern's `*` does not cross a folder, as setuptools' glob does not
    unshipped = [f for f in files if not any(fnmatchcase(f, p) and f.count("/") == p.count("/") for p in patterns)
                 and f != "__init__.py" and not f.endswith("/__init__.py")]
    assert unshipped == []
