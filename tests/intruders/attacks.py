"""The attempts an intruder makes at every invocation; each returns what it got, or None.

A read that returns data, a connection that opens, a runner object found in memory is a leak.
Writes outside the workspace are attempted too; whether one landed is for the test to check on
the host, because a write into the sandbox's private /tmp or home succeeds and vanishes.
"""

from __future__ import annotations

import gc
import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

TARGETS_ENV = "INTRUDER_TARGETS"
RUNNER_TYPES = {"Recorder", "Orchestrator", "ToolSession", "_Marathon", "InProcessClient",
                "ScheduledFault", "Schedule"}


def targets() -> dict[str, Any]:
    return json.loads(os.environ.get(TARGETS_ENV, "{}"))


def _read_any(folder: str, pattern: str = "**/*") -> str | None:
    try:
        for path in Path(folder).glob(pattern):
            if path.is_file() and path.read_bytes():
                return str(path)
    except OSError:
        return None
    return None


def schedule(t: dict[str, Any]) -> str | None:
    """The live bundle's schedule, or an earlier run's in the output folder."""
    return _read_any(t["out_dir"], "**/schedule.jsonl")


def bundle(t: dict[str, Any]) -> str | None:
    return _read_any(t["bundle"])


def cache(t: dict[str, Any]) -> str | None:
    return _read_any(t["cache"])


def catalog(t: dict[str, Any]) -> str | None:
    """The shipped catalog, read as files and through the package's own schedule code."""
    try:
        import importlib.resources

        for entry in importlib.resources.files("pytest_marathon.fault_catalog").iterdir():
            if entry.is_dir():
                for item in entry.iterdir():
                    if item.name.endswith(".yaml") and item.read_text():
                        return f"catalog file {item.name}"
    except Exception:  # noqa: BLE001 - any failure is a failed attempt
        pass
    try:
        from pytest_marathon.faults import schedule_for

        records = schedule_for(t["app"], t["scenario"], t["seed"]).records()
        if records:
            return f"schedule_for gave {len(records)} faults"
    except Exception:  # noqa: BLE001
        pass
    return None


def home(t: dict[str, Any]) -> str | None:
    try:
        return "home secret" if Path(t["home_secret"]).read_text() else None
    except OSError:
        return None


def runner_memory(t: dict[str, Any]) -> str | None:
    found = set()
    for o in gc.get_objects():
        name = getattr(type(o), "__name__", None)  # some libraries' sentinels have none
        if isinstance(name, str) and name in RUNNER_TYPES:
            found.add(name)
    return f"runner objects {sorted(found)}" if found else None


def runner_proc(t: dict[str, Any]) -> str | None:
    pid = t["runner_pid"]
    try:
        os.kill(pid, 0)
        return f"signalled the runner (pid {pid})"
    except PermissionError:
        return f"the runner (pid {pid}) is visible"
    except OSError:
        pass
    for name in ("cmdline", "environ", "maps"):
        try:
            if Path(f"/proc/{pid}/{name}").read_bytes():
                return f"/proc/{pid}/{name}"
        except OSError:
            continue
    return None


def network(t: dict[str, Any]) -> str | None:
    try:
        with socket.create_connection(("127.0.0.1", t["listen_port"]), timeout=2):
            return f"connected to 127.0.0.1:{t['listen_port']}"
    except OSError:
        return None


def secret_env(t: dict[str, Any]) -> str | None:
    """The runner's seed salt, or the user's own model key (the agent gets a placeholder)."""
    if "MARATHON_SEED_SALT" in os.environ:
        return "MARATHON_SEED_SALT"
    if t.get("user_key") and t["user_key"] in os.environ.values():
        return "the user's API key"
    return None


def write_outside(t: dict[str, Any]) -> str | None:
    for path in t["write_probes"]:
        try:
            Path(path).write_text("intruder was here")
        except OSError:
            continue
    return None


def plant_links(t: dict[str, Any]) -> str | None:
    """Links in the workspace where the runner writes (the alert file, the MCP config, the
    program logs), pointing at write probes outside: the runner must not write through them."""
    probes = t["write_probes"]
    planted = {"mcp.json": probes[0], ".marathon/alerts.json": probes[1]}
    planted.update({f".marathon/invocation-{n:03d}.log": probes[2] for n in range(1, 40)})
    for name, target in planted.items():
        link = Path(name)
        try:
            link.parent.mkdir(exist_ok=True)
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(target)
        except OSError:
            continue
    return None


ATTACKS: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "schedule": schedule,
    "bundle": bundle,
    "cache": cache,
    "catalog": catalog,
    "home": home,
    "runner_memory": runner_memory,
    "runner_proc": runner_proc,
    "network": network,
    "secret_env": secret_env,
    "write_outside": write_outside,
    "plant_links": plant_links,
}


def attempt() -> list[str]:
    """Every attack once; the names of those that leaked (short: failure details are clipped)."""
    t = targets()
    if not t:
        raise RuntimeError(f"{TARGETS_ENV} is not set: the intruder does not know where to look")
    leaks = []
    for name, attack in ATTACKS.items():
        got = attack(t)
        if got:
            leaks.append(name)
    return leaks
