"""The bubblewrap command line an agent process runs under, and the environment it gets.

Inside: the whole filesystem read-only; the home, the temporary folders and /run replaced by
empty private ones (only the agent's runtime shown again, read-only); the output folder, the
baseline cache and the package's catalog and scenarios hidden; the workspace the only writable
place that outlives the process; a new pid namespace (its own /proc: the runner is not there);
no network but loopback, on which the endpoints named on the context are relayed from outside
(`relay.py`, `inner.py`). The runner builds one `Sandbox` per run and puts it on the invocation
context (`ctx.sandbox`); `run_process_invocation` and the child plug-in process wrap their
command with it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_marathon.isolation.paths import hidden_roots, inside, runtime_dirs, secret_dirs
from pytest_marathon.isolation.probe import namespace_flags, sandbox_support
from pytest_marathon.seed_salt import SEED_SALT_ENV

#: Variables of the runner an agent process must not inherit (the seed salt is the one secret
#: that makes a schedule unpredictable from the public catalog).
SECRET_ENV = (SEED_SALT_ENV,)
RELAY_MOUNT = "/run/marathon-relay"
INNER = Path(__file__).with_name("inner.py")


@dataclass(frozen=True)
class Sandbox:
    """How agent processes of one run are confined.

    `relays` maps a loopback port to the Unix socket (outside) that reaches it; `hidden` are the
    run's folders to hide besides the package's catalog and scenarios. With `enabled` False
    (no bubblewrap here) only the environment is cleaned: plain process isolation.
    """

    workspace: Path
    hidden: tuple[Path, ...] = ()
    relays: Mapping[int, Path] = field(default_factory=dict)
    readable: tuple[Path, ...] = ()
    enabled: bool = True

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """The agent's environment: the runner's secrets removed, TMPDIR the private /tmp."""
        cleaned = {key: value for key, value in env.items() if key not in SECRET_ENV}
        if self.enabled:
            cleaned["TMPDIR"] = "/tmp"
        return cleaned

    def wrap(self, argv: Sequence[str], *, cwd: str | os.PathLike[str] | None = None) -> list[str]:
        """`argv` as run inside the sandbox (unchanged when the sandbox is not enabled)."""
        argv = list(argv)
        if not self.enabled or not argv:
            return argv
        program = argv[0] if os.sep in argv[0] else shutil.which(argv[0]) or argv[0]
        command = argv
        if self.relays:
            relay_args = [f"{RELAY_MOUNT}/{port}.sock={port}" for port in sorted(self.relays)]
            command = [sys.executable, "-I", "-S", str(INNER), *relay_args, "--", *argv]
        programs = [program, sys.executable, *(a for a in argv[1:] if _is_program(a))]
        scripts = [Path(a).parent for a in argv[1:] if _is_script(a)]
        return [
            sandbox_support().bwrap or "bwrap",
            *self.mounts(programs=programs, folders=scripts),
            *namespace_flags(),
            "--chdir",
            str(cwd or self.workspace),
            "--",
            *command,
        ]

    def mounts(self, programs: Sequence[str] = (), folders: Sequence[Path] = ()) -> list[str]:
        """bwrap's mount arguments; later ones are mounted over earlier ones. `folders`: the
        folders of scripts the command names (`python /tmp/x/agent.py`), shown read-only."""
        roots = hidden_roots()
        args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for root in roots:
            args += ["--tmpfs", str(root)]
        for place in [*runtime_dirs(programs), *self.readable, *folders]:
            if inside(place, roots):
                args += ["--ro-bind", str(place), str(place)]
        for secret in secret_dirs(self.hidden):
            args += ["--tmpfs", str(secret), "--remount-ro", str(secret)]
        if self.relays:
            directory = {path.parent for path in self.relays.values()}
            if len(directory) != 1:
                raise ValueError("relay sockets must share one folder")
            args += ["--ro-bind", str(directory.pop()), RELAY_MOUNT]
        workspace = str(self.workspace.resolve())
        return [*args, "--bind", workspace, workspace]


def _is_script(arg: str) -> bool:
    """An absolute path to a file that is not executable among the arguments: a script its
    interpreter runs. Only its own folder is shown again (the secret folders stay hidden over
    it), not the folder above, which for a script in the home would be the whole home."""
    return os.path.isabs(arg) and os.path.isfile(arg) and not os.access(arg, os.X_OK)


def _is_program(arg: str) -> bool:
    """An absolute path to an executable file among the arguments (a preset runs its CLI
    through a shell): shown again, read-only, with its folder, if it is under a hidden root."""
    return os.path.isabs(arg) and os.path.isfile(arg) and os.access(arg, os.X_OK)
