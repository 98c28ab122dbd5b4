"""One marathon run's configuration, shared by the CLI, the plugin and the `marathon` fixture.

Everything that changes a run's outcome lives here, so a bundle's manifest can record it and two
runs with equal configs (and equal agent decisions) are the same run.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_SCENARIO = "marathon"
DEFAULT_BACKEND = "twin"
BACKENDS = ("twin", "kubernetes")
DEFAULT_DELTA_S = 120.0
DEFAULT_BUDGET_S = 110.0
DEFAULT_MUTATION_CAP = 10
DEFAULT_MAX_COST_USD = 8.0  # the paper's per-run budget
WARMUP_S = 300.0
ALERT_EVERY_S = 15.0


class ConfigError(ValueError):
    """A configuration value that cannot describe a run; the message names value and choices."""


@dataclass(frozen=True)
class RunConfig:
    """What one run is: app, agent, scenario and seed on a backend, with the invocation cadence.

    `agent` is the user's spec (`runbook`, `module:Class`, `cmd:"..."`); an agent object passed
    to the runner directly overrides it but the spec still names the run in ids and manifests.
    `seed_salt` is the session's secret salt (pytest_marathon/seed_salt.py): it changes the
    schedule, so it is part of what the run is, but only its commitment is ever recorded, and
    it is left out of the repr so that a traceback or `--showlocals` does not print it.
    """

    app: str
    agent: str
    seed: int
    scenario: str = DEFAULT_SCENARIO
    backend: str = DEFAULT_BACKEND
    delta_s: float = DEFAULT_DELTA_S
    budget_s: float = DEFAULT_BUDGET_S
    users: int | None = None
    out_dir: Path = field(default_factory=lambda: Path("marathon-bundles"))
    mutation_cap: int = DEFAULT_MUTATION_CAP
    #: Dollars the run's model calls may cost before the metering proxy refuses further calls
    #: (None: no budget); `price_table` is the user's price file (None: the built-in table).
    max_cost_usd: float | None = DEFAULT_MAX_COST_USD
    price_table: Path | None = None
    #: The model the run's model-based agents ask (MARATHON_MODEL during the run; None: the
    #: environment's or the agent's default); recorded, no part of the baseline identity.
    model: str | None = None
    seed_salt: str | None = field(default=None, repr=False)
    #: Where a non-twin backend finds its system (`kubeconfig`, `context`, `prometheus_url`,
    #: `jaeger_url`, `registry` for `kubernetes`), as sorted (name, value) pairs; not recorded: an address
    #: says where the run happened, not what it was.
    backend_options: tuple[tuple[str, str], ...] = ()
    #: Folders a run records its model exchanges in, or replays them from
    #: (pytest_marathon/metering/exchanges.py); not recorded: a replay is the same run.
    record_model: Path | None = None
    replay_model: Path | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ConfigError(
                f"unknown backend {self.backend!r}; choose one of: {', '.join(BACKENDS)}"
            )
        if self.seed < 0:
            raise ConfigError(f"seed must be >= 0, got {self.seed}")
        if self.delta_s <= 0 or self.delta_s % 5:
            raise ConfigError(f"delta must be a positive multiple of 5 s, got {self.delta_s}")
        if self.budget_s <= 0:
            raise ConfigError(f"budget must be positive, got {self.budget_s}")
        if self.mutation_cap < 0:
            raise ConfigError(f"mutation cap must be >= 0, got {self.mutation_cap}")
        if self.users is not None and self.users <= 0:
            raise ConfigError(f"users must be positive, got {self.users}")
        if self.max_cost_usd is not None and not 0 <= self.max_cost_usd < float("inf"):
            raise ConfigError(f"max cost must be a finite number >= 0, got {self.max_cost_usd}")
        if self.model is not None and (not self.model.strip() or self.model != self.model.strip()):
            raise ConfigError(
                f"model must be a non-empty name without surrounding spaces, got {self.model!r}"
            )
        if self.record_model is not None and self.replay_model is not None:
            raise ConfigError("a run either records its model exchanges or replays them, not both")
        if self.seed_salt is not None:
            from pytest_marathon.seed_salt import SeedSaltError, check_salt

            try:
                check_salt(self.seed_salt)
            except SeedSaltError as exc:
                raise ConfigError(str(exc)) from None

    @property
    def run_salt(self) -> str | None:
        """This run's salt (the schedule's key, revealed in the manifest at sealing), or None."""
        if self.seed_salt is None:
            return None
        from pytest_marathon.seed_salt import run_salt

        return run_salt(self.seed_salt, self.app, self.scenario, self.seed)

    @property
    def run_id(self) -> str:
        """Readable, filesystem-safe id: `boutique-runbook-seed1` (+ `-<scenario>` if not default)."""
        parts = [self.app, agent_slug(self.agent), f"seed{self.seed}"]
        if self.scenario != DEFAULT_SCENARIO:
            parts.append(scenario_slug(self.scenario))
        return "-".join(parts)

    @property
    def bundle_dir(self) -> Path:
        return Path(self.out_dir) / self.run_id

    def manifest_config(self) -> dict[str, Any]:
        """The JSON-safe config recorded in the bundle manifest: everything the scorer's baseline
        rule compares. The user count is the effective number (the app's default when unset, so
        a default and its explicit value are one run), times are floats (60 and 60.0 are one
        run), and digests of the scenario, catalog and rule-pack files the run reads are added,
        since a name does not prove its content. No output paths: they are not part of what the
        run is. The model budget is recorded, and the price table by its digest (not its path):
        the same tokens at other prices are another cost. The seed salt is recorded as its
        commitment alone (`seed_salt_commitment`, null for an unsalted run), so a noop baseline
        must share the salt to share the config."""
        from pytest_marathon.metering.prices import load_price_table
        from pytest_marathon.run.digests import effective_users, run_digests
        from pytest_marathon.seed_salt import commitment

        data = asdict(self)
        data.pop("out_dir")
        data["price_table_digest"] = load_price_table(data.pop("price_table")).digest
        data.pop("seed_salt")
        data.pop("backend_options")
        data.pop("record_model")
        data.pop("replay_model")
        run_salt = self.run_salt
        data["seed_salt_commitment"] = None if run_salt is None else commitment(run_salt)
        data["users"] = effective_users(self.app, self.backend, self.users)
        data["delta_s"] = float(self.delta_s)
        data["budget_s"] = float(self.budget_s)
        data.update(run_digests(self.app, self.scenario))
        return data


def agent_slug(spec: str) -> str:
    """A short id-safe name for an agent spec: `runbook`, `mypkg.Agent`, `cmd-agent.py-1a2b3c`.

    A `cmd:` agent is named by its program (the script, when an interpreter runs one) and a
    digest of the whole command line, so two commands with the same interpreter, or the same
    script with other arguments, get distinct test ids and bundle folders, and one command always
    the same."""
    text = spec
    if text.startswith("cmd:"):
        text = "cmd-" + _command_name(text[4:]) + "-" + _command_digest(text[4:])
    elif ":" in text:
        text = text.split(":", 1)[1]
    slug = re.sub(r"[^A-Za-z0-9_.]+", "-", text).strip("-")
    return slug or "agent"


def _command_words(command: str) -> list[str]:
    text = command.strip()
    if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]  # cmd:"prog args" as typed in a shell that kept the quotes
    try:
        return shlex.split(text)
    except ValueError:  # unbalanced quotes: the words as typed
        return text.split()


def _command_name(command: str) -> str:
    """The script an interpreter runs (`python agent.py` -> `agent.py`), else the program."""
    words = [word.rsplit("/", 1)[-1] for word in _command_words(command)] or ["agent"]
    if len(words) > 1 and not words[1].startswith("-") and "." in words[1]:
        return words[1]
    return words[0]


def _command_digest(command: str) -> str:
    """Six hex digits of the command's words, so spacing and quoting do not change it."""
    words = "\0".join(_command_words(command))
    return hashlib.sha256(words.encode()).hexdigest()[:6]


def scenario_slug(scenario: str) -> str:
    """A scenario's short, path-free name for ids: a built-in's name, a scenario file's stem."""
    if Path(scenario).suffix in (".yaml", ".yml"):
        return re.sub(r"[^A-Za-z0-9_.]+", "-", Path(scenario).stem).strip("-") or "scenario"
    return scenario


def parse_seeds(values: list[str] | tuple[str, ...]) -> list[int]:
    """Seeds from `3`, `1-5`, `1,4,7` (any mix, repeatable); sorted, without duplicates."""
    seeds: set[int] = set()
    for value in values:
        for part in str(value).split(","):
            part = part.strip()
            match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
            if not match:
                raise ConfigError(
                    f"bad seed {part!r}: use a number (3), a range (1-5) or a list (1,4,7)"
                )
            low = int(match.group(1))
            high = int(match.group(2)) if match.group(2) else low
            if high < low:
                raise ConfigError(f"bad seed range {part!r}: the end is below the start")
            seeds.update(range(low, high + 1))
    return sorted(seeds)


def available_apps() -> list[str]:
    """Apps the twin ships (a folder with an `app.yaml` under `twin/apps/`), sorted."""
    from importlib import resources

    root = resources.files("pytest_marathon.twin.apps")
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "app.yaml").is_file())


def available_scenarios() -> list[str]:
    from pytest_marathon.faults.scenario import builtin_scenarios

    return builtin_scenarios()
