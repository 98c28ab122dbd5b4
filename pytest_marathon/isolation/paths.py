"""Which directories an agent process must not see, and which of them it needs back to run.

The package's fault catalog and scenarios (with the seed they give the schedule), the git
repository of the checkout they are installed from (its history holds them too), the output
folder (live and earlier bundles) and the baseline cache (noop bundles hold the schedule) are
hidden outright. The user's home and the temporary directories are hidden as a whole, since
they hold everything from credentials to other runs' workspaces; from them, only what the
agent's program needs to start (its interpreter, import path and installed CLI) is shown again,
read-only.
"""

from __future__ import annotations

import importlib.resources
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

#: Packages whose folders are ground truth: where `schedule_for` reads faults and arrival rates.
SECRET_PACKAGES = ("pytest_marathon.fault_catalog", "pytest_marathon.scenarios")
#: Folders (from the current directory) that hold earlier runs' bundles, baselines and saved
#: results by default: hidden from every sandbox, also from the throwaway child that imports a
#: plug-in before any run exists.
DEFAULT_HIDDEN = (Path(".marathon"), Path("marathon-bundles"))
#: Packages the tools client of a child plug-in imports.
CLIENT_PACKAGES = ("pytest_marathon", "pytest_marathon.agents")


def real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(os.fspath(path)))


def package_dirs(names: Iterable[str]) -> list[Path]:
    """Where packages live, editable installs included (they may map a package anywhere)."""
    found: list[Path] = []
    for name in names:
        try:
            root = importlib.resources.files(name)
        except (ModuleNotFoundError, TypeError):
            continue
        if isinstance(root, Path):
            found.append(real(root))
        else:  # a namespace package: every folder it spans
            found.extend(real(p) for p in getattr(root, "_paths", ()))
    return found


def hidden_roots() -> list[Path]:
    """The home and temporary folders, replaced by empty private ones in the sandbox."""
    candidates = [Path.home(), Path("/tmp"), Path("/var/tmp"), Path(tempfile.gettempdir())]
    for variable in ("TMPDIR", "TEMP", "TMP", "XDG_RUNTIME_DIR"):
        if os.environ.get(variable):
            candidates.append(Path(os.environ[variable]))
    # /run holds sockets of system services, which a read-only mount does not stop a process
    # from connecting to.
    candidates.append(Path("/run"))
    return outermost_first(_existing_dirs(candidates))


def secret_dirs(extra: Iterable[str | os.PathLike[str]] = ()) -> list[Path]:
    """Folders hidden even where a shown-again folder contains them."""
    packages = package_dirs(SECRET_PACKAGES)
    return _existing_dirs([*packages, *checkout_git_dirs(packages), *(Path(p) for p in extra)])


def checkout_git_dirs(folders: Iterable[Path]) -> list[Path]:
    """The git repositories of the source checkouts `folders` lie in (an editable install):
    their history holds the catalog as well (`git show HEAD:fault_catalog/...`). A worktree's
    `.git` is a file naming its folder in the main repository, whose objects it shares
    (`commondir`): that repository is hidden whole."""
    found: list[Path] = []
    for folder in folders:
        for parent in [folder, *folder.parents]:
            dot_git = parent / ".git"
            if dot_git.is_dir():
                found.append(dot_git)
            elif dot_git.is_file():
                found.append(_common_git_dir(dot_git))
            else:
                continue
            break
    return found


def _common_git_dir(dot_git_file: Path) -> Path:
    """The repository a worktree's `.git` file (`gitdir: <path>`) belongs to."""
    try:
        text = dot_git_file.read_text(encoding="utf-8").strip()
    except OSError:
        return dot_git_file
    if not text.startswith("gitdir:"):
        return dot_git_file
    gitdir = (dot_git_file.parent / text.removeprefix("gitdir:").strip()).resolve()
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return gitdir
    return (gitdir / common).resolve()


def runtime_dirs(programs: Iterable[str] = ()) -> list[Path]:
    """What an agent process needs to start: the Python it may be, its import path (pytest
    puts test folders on it), `PYTHONPATH`, the tools client's packages, and the folders of the
    programs it runs (a CLI installed under the home: its `bin` folder and its package)."""
    places: list[Path] = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).parent]
    places += [Path(entry or os.getcwd()) for entry in sys.path]
    places += [Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    places += package_dirs(CLIENT_PACKAGES)
    for program in programs:
        path = Path(program)
        places += [path.parent, real(path).parent, real(path).parent.parent]
    return outermost_first(_existing_dirs(places))


def _existing_dirs(paths: Iterable[Path]) -> list[Path]:
    seen: dict[Path, None] = {}
    for path in paths:
        try:
            resolved = real(path.expanduser().absolute())
        except (OSError, RuntimeError):
            continue
        if resolved.is_dir() and resolved != Path("/"):
            seen.setdefault(resolved, None)
    return list(seen)


def outermost_first(paths: list[Path]) -> list[Path]:
    """Mount order: a folder before the folders inside it, which are then mounted over it (a
    home under /tmp gets its own empty tmpfs instead of vanishing in /tmp's)."""
    return sorted(paths, key=lambda path: len(path.parts))


def inside(path: Path, roots: Iterable[Path]) -> bool:
    """Whether `path` lies strictly inside one of `roots`."""
    return any(root in path.parents for root in roots)
