"""What the isolation tests share: the targets an intruder is told about, the write probes to
look for on the host afterwards, and the score compared between an intruder and its honest twin.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.config import RunConfig
from pytest_marathon.isolation.paths import package_dirs
from pytest_marathon.isolation.probe import sandbox_support

SCENARIO, SEED = "short-5", 1
PROBE = "intruder-probe"
USER_KEY = "sk-the-users-own-key"


def need_sandbox() -> None:
    support = sandbox_support()
    if not support.available:
        pytest.skip(f"bubblewrap cannot sandbox here: {support.reason}")


@dataclass
class Scene:
    """Where the answers are and where an intruder would write, for one test."""

    out_dir: Path
    cache: Path
    home: Path
    listener: socket.socket
    probes: list[Path]

    def config(self, agent: str, **overrides: Any) -> RunConfig:
        return RunConfig(app="boutique", agent=agent, seed=SEED, scenario=SCENARIO,
                         out_dir=self.out_dir, **overrides)

    def targets(self, config: RunConfig) -> dict[str, Any]:
        return {
            "out_dir": str(self.out_dir),
            "bundle": str(config.bundle_dir),
            "cache": str(self.cache),
            "home_secret": str(self.home / "secret.txt"),
            "runner_pid": os.getpid(),
            "listen_port": self.listener.getsockname()[1],
            "write_probes": [str(p) for p in self.probes],
            "app": "boutique",
            "scenario": SCENARIO,
            "seed": SEED,
            "user_key": USER_KEY,
        }

    def landed(self) -> list[Path]:
        return [p for p in self.probes if p.exists()]

    def honest_then_intruder(self, honest: str, intruder: str,
                             monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
        """The same marathon run by the honest agent, then by the intruder told every target;
        no write probe may have landed."""
        from pytest_marathon.runner import run_marathon

        honest_run = run_marathon(self.config(honest), baseline_cache=self.cache)
        config = self.config(intruder)
        monkeypatch.setenv("INTRUDER_TARGETS", json.dumps(self.targets(config)))
        intruder_run = run_marathon(config, baseline_cache=self.cache)
        assert self.landed() == []
        return honest_run, intruder_run


@contextmanager
def scene(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch,
          catalog_probe: bool = True) -> Iterator[Scene]:
    """A home with a secret, a loopback listener the agent must not reach, the seed salt in the
    runner's environment, and write probes in every place outside the workspace."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text("the user's credentials")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MARATHON_SEED_SALT", "not for agents")
    monkeypatch.setenv("OPENAI_API_KEY", USER_KEY)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    tag = uuid.uuid4().hex[:8]
    probes = [out_dir / PROBE, cache / PROBE, home / PROBE, Path("/tmp") / f"{PROBE}-{tag}",
              Path("/var/tmp") / f"{PROBE}-{tag}", out_dir / f"boutique-x-seed{SEED}" / PROBE]
    if catalog_probe:
        probes += [d / f"{PROBE}-{tag}" for d in package_dirs(["pytest_marathon.fault_catalog"])]
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        yield Scene(out_dir, cache, home, listener, probes)
    finally:
        listener.close()
        for probe in probes:
            if probe.exists():
                probe.unlink()


def comparable_score(score: Mapping[str, Any]) -> dict[str, Any]:
    """The score JSON without the run's identity (agent name, flags, content digest)."""
    return {key: value for key, value in score.items() if key != "run"}


def manifest(bundle: Path) -> dict[str, Any]:
    return json.loads((bundle / "manifest.json").read_text())


@pytest.fixture
def no_sandbox(monkeypatch: pytest.MonkeyPatch):
    """Plain process isolation for one test: the probe's cached answer is cleared both ways."""
    monkeypatch.setenv("MARATHON_SANDBOX", "off")
    sandbox_support.cache_clear()
    yield
    monkeypatch.delenv("MARATHON_SANDBOX")
    sandbox_support.cache_clear()
