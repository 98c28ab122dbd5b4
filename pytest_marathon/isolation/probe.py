"""Whether bubblewrap can sandbox agent processes on this machine, probed once per process.

A kernel without unprivileged user namespaces, a container that forbids them, or a missing
`bwrap` all make the sandbox impossible; the run then falls back to plain process isolation and
records `process` instead of `sandbox`, so nobody mistakes the fallback for the real thing.
`MARATHON_SANDBOX=off` forces the fallback (to compare a sandboxed run with an unsandboxed one).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import warnings
from dataclasses import dataclass

BWRAP = "bwrap"
DISABLE_ENV = "MARATHON_SANDBOX"
PROBE_TIMEOUT_S = 10.0


class SandboxUnavailableWarning(UserWarning):
    """Agent processes run without bubblewrap here (the reason is in the message)."""


@dataclass(frozen=True)
class SandboxSupport:
    """`bwrap` is the program to run when `available`; otherwise `reason` says why not."""

    available: bool
    bwrap: str = ""
    reason: str = ""


def namespace_flags() -> list[str]:
    """The isolation every sandbox gets: all namespaces new (network: loopback only), killed with
    its parent, its own session (no terminal to inject keystrokes into), and no capabilities
    (bwrap keeps them for root unless told, and with CAP_SYS_ADMIN a process could unmount the
    tmpfs that hides a directory)."""
    flags = ["--unshare-all", "--die-with-parent", "--new-session"]
    if os.geteuid() == 0:
        flags += ["--cap-drop", "ALL"]
    return flags


@functools.cache
def sandbox_support() -> SandboxSupport:
    """Probe once: run `bwrap ... true` with the namespaces every sandbox uses."""
    if os.environ.get(DISABLE_ENV, "").strip().lower() in ("0", "off", "no", "false"):
        return _unavailable(f"disabled by {DISABLE_ENV}=off")
    program = shutil.which(BWRAP)
    if program is None:
        return _unavailable("bubblewrap (`bwrap`) is not installed (Debian package `bubblewrap`)")
    argv = [program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            *namespace_flags(), "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return _unavailable(f"`bwrap` could not run: {exc}")
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return _unavailable(
            "the kernel refused bubblewrap's namespaces: "
            + (message[0] if message else f"exit {done.returncode}")
        )
    return SandboxSupport(True, program)


def _unavailable(reason: str) -> SandboxSupport:
    warnings.warn(
        f"agent processes run without a sandbox (plain process isolation): {reason}",
        SandboxUnavailableWarning,
        stacklevel=3,
    )
    return SandboxSupport(False, reason=reason)
