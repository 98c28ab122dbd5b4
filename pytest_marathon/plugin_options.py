"""The plugin's command-line and ini options, and their validation into `MarathonSettings`.

Every option but the seed salt is also an ini option (`marathon_app = boutique` in pytest.ini /
pyproject), the command line winning; the salt is a secret, which a committed file would publish,
so it comes from `--marathon-seed-salt` or the `MARATHON_SEED_SALT` environment variable. Bad values stop pytest before collection with a `pytest.UsageError` that
names the value and the choices, so a typo never turns into a silently empty grid.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.config import (
    BACKENDS,
    DEFAULT_BACKEND,
    DEFAULT_BUDGET_S,
    DEFAULT_DELTA_S,
    DEFAULT_MAX_COST_USD,
    DEFAULT_SCENARIO,
    ConfigError,
    RunConfig,
    agent_slug,
    available_scenarios,
    parse_seeds,
)
from pytest_marathon.marathon_apps import marathon_app_problem, marathon_apps
from pytest_marathon.results import DEFAULT_MAX_FAILED_INVOCATIONS, parse_failure_fraction
from pytest_marathon.storage import (
    CompareRule,
    StorageError,
    check_save_name,
    parse_compare_rule,
)

# (option, ini name, ini type, help); repeatable options are ini line lists
_OPTIONS: tuple[tuple[str, str, str, str], ...] = (
    ("--marathon-app", "marathon_app", "linelist", "app to run marathons on (repeatable)"),
    (
        "--agent",
        "marathon_agent",
        "linelist",
        "agent: a built-in or entry-point name, module:Class, or cmd:\"...\" (repeatable)",
    ),
    ("--marathon-seed", "marathon_seed", "linelist", "seed, range 1-5 or list 1,4 (repeatable)"),
    (
        "--marathon-scenario",
        "marathon_scenario",
        "linelist",
        f"scenario name or YAML path (repeatable; default {DEFAULT_SCENARIO})",
    ),
    ("--marathon-backend", "marathon_backend", "string", f"backend (default {DEFAULT_BACKEND})"),
    (
        "--marathon-kubeconfig",
        "marathon_kubeconfig",
        "string",
        "kubeconfig of the cluster the kubernetes backend runs on (with --marathon-context; "
        "neither: a twin behind its own Kubernetes API)",
    ),
    (
        "--marathon-prometheus-url",
        "marathon_prometheus_url",
        "string",
        "Prometheus the kubernetes backend queries on a cluster",
    ),
    (
        "--marathon-jaeger-url",
        "marathon_jaeger_url",
        "string",
        "Jaeger query service the kubernetes backend reads traces from on a cluster",
    ),
    (
        "--marathon-registry",
        "marathon_registry",
        "string",
        "image registry for code faults on a cluster (without one they are skipped)",
    ),
    (
        "--marathon-delta",
        "marathon_delta",
        "string",
        f"virtual seconds between agent invocations (default {DEFAULT_DELTA_S:g})",
    ),
    (
        "--marathon-budget",
        "marathon_budget",
        "string",
        f"wall-clock budget of one agent invocation, s (default {DEFAULT_BUDGET_S:g})",
    ),
    ("--marathon-min-score", "marathon_min_score", "string", "fail a run scoring below this"),
    ("--marathon-max-risk", "marathon_max_risk", "string", "fail a run whose Risk exceeds this"),
    (
        "--marathon-max-degradation",
        "marathon_max_degradation",
        "string",
        "fail a run whose degradation level (%% of the no-action run) exceeds this",
    ),
    (
        "--marathon-max-failed-invocations",
        "marathon_max_failed_invocations",
        "string",
        "fail a run when more than this share of its invocations did not end ok: a percentage "
        "(25%%) or a fraction (0.25); default 25%%",
    ),
    (
        "--marathon-bundle-dir",
        "marathon_bundle_dir",
        "string",
        "where run bundles go (default .marathon/bundles)",
    ),
    ("--marathon-json", "marathon_json", "string", "write JSON results to this file"),
    ("--marathon-report", "marathon_report", "string", "write the HTML report to this file"),
    ("--marathon-save", "marathon_save", "string",
     "save results as NAME in the storage folder (--marathon-storage)"),
    (
        "--marathon-storage",
        "marathon_storage",
        "string",
        "folder of saved runs for --marathon-save and --marathon-compare (default .marathon/saved)",
    ),
    (
        "--marathon-openmetrics",
        "marathon_openmetrics",
        "string",
        "write the metrics as an OpenMetrics text file (GitLab's metrics report)",
    ),
    (
        "--marathon-sign-key",
        "marathon_sign_key",
        "string",
        "sign every run bundle with this Ed25519 private key file (pytest-marathon keygen)",
    ),
    (
        "--marathon-max-cost",
        "marathon_max_cost",
        "string",
        "model budget per run in USD, enforced by the metering proxy: once spent, further model "
        "calls are refused (default 8; none for no budget)",
    ),
    (
        "--marathon-price-table",
        "marathon_price_table",
        "string",
        "YAML price table (USD per million tokens per model) replacing the built-in one",
    ),
    (
        "--marathon-model",
        "marathon_model",
        "string",
        "model the model-based agents ask (MARATHON_MODEL for each run; recorded in the manifest)",
    ),
    (
        "--marathon-record-model",
        "marathon_record_model",
        "string",
        "record every model exchange of each run in DIR/<run id>.jsonl (docs/model-recordings.md)",
    ),
    (
        "--marathon-replay-model",
        "marathon_replay_model",
        "string",
        "answer each run's model calls from DIR/<run id>.jsonl, with no upstream and no network; "
        "a request the recording does not hold fails the run",
    ),
    (
        "--marathon-compare-fail",
        "marathon_compare_fail",
        "linelist",
        "fail a run that regressed vs the compared save: METRIC:TOLERANCE (score:5, score:10%%)",
    ),
)
_REPEATABLE = {"--marathon-app", "--agent", "--marathon-seed", "--marathon-scenario",
               "--marathon-compare-fail"}


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("marathon", "SRE marathons (pytest-marathon)")
    for option, ini, ini_type, help_text in _OPTIONS:
        dest = ini
        if option in _REPEATABLE:
            group.addoption(option, action="append", dest=dest, default=None, help=help_text)
        else:
            group.addoption(option, dest=dest, default=None, help=help_text)
        parser.addini(ini, help_text.replace("%%", "%"), type=ini_type, default=None)
    group.addoption(
        "--marathon-compare",
        dest="marathon_compare",
        nargs="?",
        const="latest",
        default=None,
        metavar="NAME",
        help="compare with a saved run (the newest if NAME is omitted)",
    )
    parser.addini("marathon_compare", "saved run to compare with", type="string", default=None)
    group.addoption(
        "--marathon-require-isolation",
        dest="marathon_require_isolation",
        action="store_const",
        const=True,
        default=None,
        help="refuse to start an agent that would not run in the bubblewrap sandbox "
        "(the built-in baselines excepted)",
    )
    parser.addini(
        "marathon_require_isolation",
        "refuse agents that would not run in the sandbox",
        type="bool",
        default=False,
    )
    group.addoption(
        "--marathon-serve-api",
        dest="marathon_serve_api",
        action="store_true",
        default=False,
        help="while each run is recorded, serve the Kubernetes and Prometheus APIs over its live "
        "backend, read-only; the addresses and kubeconfig are printed (not with -n)",
    )
    group.addoption(
        "--marathon-seed-salt",
        dest="marathon_seed_salt",
        default=None,
        metavar="SALT",
        help="secret salt the fault schedules are drawn with (default: $MARATHON_SEED_SALT; no "
        "ini option): bundles commit to it and reveal each run's salt at sealing",
    )


@dataclass(frozen=True)
class MarathonSettings:
    """Validated plugin configuration; `active` when the grid has at least one run."""

    apps: tuple[str, ...]
    agents: tuple[str, ...]
    seeds: tuple[int, ...]
    scenarios: tuple[str, ...]
    backend: str
    #: Invocation cadence (virtual s) and per-invocation wall budget (s) of every run.
    delta_s: float
    budget_s: float
    min_score: float | None
    max_risk: float | None
    max_degradation: float | None
    bundle_dir: Path
    #: Share (0..1) of a run's invocations that may end other than `ok` before its item fails.
    max_failed_invocations: float
    cache_dir: Path
    storage_dir: Path
    json_path: Path | None
    report_path: Path | None
    #: The OpenMetrics file for GitLab's metrics report (None: not written).
    openmetrics_path: Path | None
    save: str | None
    compare: str | None
    compare_fail: tuple[CompareRule, ...]
    #: The loaded Ed25519 private key bundles are signed with (None: unsigned). Loaded while
    #: options are validated, so a bad key file stops pytest before any run starts.
    sign_key: Any = None
    #: The metering proxy's budget per run in USD (None: none) and the user's price table file.
    max_cost_usd: float | None = DEFAULT_MAX_COST_USD
    price_table: Path | None = None
    #: The model the model-based agents ask (`--marathon-model`; None: MARATHON_MODEL or default).
    model: str | None = None
    #: Where the kubernetes backend finds its cluster (RunConfig.backend_options).
    backend_options: tuple[tuple[str, str], ...] = ()
    #: Refuse agents below the sandbox (`--marathon-require-isolation`).
    require_isolation: bool = False
    #: Serve the live APIs read-only while each run is recorded (`--marathon-serve-api`).
    serve_api: bool = False
    #: Folders model exchanges are recorded in / replayed from (at most one is set).
    record_model: Path | None = None
    replay_model: Path | None = None
    #: The session's secret seed salt (None: public schedules); never in the repr.
    seed_salt: str | None = field(default=None, repr=False)

    @property
    def active(self) -> bool:
        return bool(self.apps and self.agents)

    def suite_properties(self) -> list[tuple[str, str]]:
        """The run configuration as junit testsuite properties."""
        from pytest_marathon import RELEASE

        return [
            ("marathon_release", RELEASE),
            ("marathon_apps", ",".join(self.apps)),
            ("marathon_agents", ",".join(self.agents)),
            ("marathon_seeds", ",".join(str(s) for s in self.seeds)),
            ("marathon_scenarios", ",".join(self.scenarios)),
            ("marathon_backend", self.backend),
        ]


SETTINGS = pytest.StashKey["MarathonSettings"]()


def _value(config: pytest.Config, ini: str) -> Any:
    given = config.getoption(ini)
    if given is not None:
        return given
    return config.getini(ini) or None


def read_settings(config: pytest.Config) -> MarathonSettings:
    """Validate every option; raise `pytest.UsageError` naming the bad value and the choices."""
    root = Path(config.rootpath)
    here = Path(config.invocation_params.dir)
    apps = tuple(dict.fromkeys(_value(config, "marathon_app") or ()))
    known_apps = marathon_apps()
    episodic_mode = config.getoption("marathon_mode", None) == "episodic"
    for app in () if episodic_mode else apps:
        problem = marathon_app_problem(app)
        if problem is not None:
            raise pytest.UsageError(f"--marathon-app: {problem}")
    # the episodic mode reads --agent itself: its agents speak AIOpsLab's protocol
    episodic = config.getoption("marathon_mode", None) == "episodic"
    agents = () if episodic else tuple(dict.fromkeys(_value(config, "marathon_agent") or ()))
    require_isolation = bool(_value(config, "marathon_require_isolation"))
    for agent in agents:
        _check_agent(agent, require_isolation)
    if len({agent_slug(a) for a in agents}) != len(agents):
        raise pytest.UsageError(f"--agent: two agents get the same test id: {', '.join(agents)}")
    if agents and not apps:
        raise pytest.UsageError(
            "--agent needs --marathon-app; choose one of: " + ", ".join(known_apps)
        )
    try:
        seeds = tuple(parse_seeds(_value(config, "marathon_seed") or ["1"]))
    except ConfigError as exc:
        raise pytest.UsageError(f"--marathon-seed: {exc}") from None
    scenarios = tuple(dict.fromkeys(_value(config, "marathon_scenario") or [DEFAULT_SCENARIO]))
    known_scenarios = available_scenarios()
    for scenario in scenarios:
        if scenario not in known_scenarios and not Path(scenario).is_file():
            raise pytest.UsageError(
                f"--marathon-scenario: unknown scenario {scenario!r} (neither a built-in nor a "
                f"file); choose one of: {', '.join(known_scenarios)}"
            )
        _check_scenario(scenario)
    backend = _value(config, "marathon_backend") or DEFAULT_BACKEND
    if backend not in BACKENDS:
        raise pytest.UsageError(
            f"--marathon-backend: unknown backend {backend!r}; choose one of: {', '.join(BACKENDS)}"
        )
    delta_s = _number(config, "marathon_delta", "--marathon-delta")
    budget_s = _number(config, "marathon_budget", "--marathon-budget")
    delta_s = DEFAULT_DELTA_S if delta_s is None else delta_s
    budget_s = DEFAULT_BUDGET_S if budget_s is None else budget_s
    try:  # the run's own checks, so the plugin and `pytest-marathon run` accept the same values
        RunConfig(app="", agent="", seed=0, delta_s=delta_s, budget_s=budget_s)
    except ConfigError as exc:
        option = "--marathon-delta" if "delta" in str(exc) else "--marathon-budget"
        raise pytest.UsageError(f"{option}: {exc}") from None
    rules = []
    for spec in _value(config, "marathon_compare_fail") or ():
        try:
            rules.append(parse_compare_rule(spec))
        except StorageError as exc:
            raise pytest.UsageError(str(exc)) from None
    compare = _value(config, "marathon_compare")
    if rules and compare is None:
        compare = "latest"
    save = _value(config, "marathon_save")
    if save is not None:
        try:
            check_save_name(save)
        except StorageError as exc:
            raise pytest.UsageError(f"--marathon-save: {exc}") from None
    sign_key = _sign_key(_path(here, _value(config, "marathon_sign_key")))
    marathon_dir = root / ".marathon"
    return MarathonSettings(
        apps=apps,
        agents=agents,
        seeds=seeds,
        scenarios=scenarios,
        backend=backend,
        backend_options=_backend_options(config),
        delta_s=delta_s,
        budget_s=budget_s,
        min_score=_number(config, "marathon_min_score", "--marathon-min-score"),
        max_risk=_number(config, "marathon_max_risk", "--marathon-max-risk"),
        max_degradation=_number(config, "marathon_max_degradation", "--marathon-max-degradation"),
        bundle_dir=_path(here, _value(config, "marathon_bundle_dir")) or marathon_dir / "bundles",
        max_failed_invocations=_failure_fraction(config),
        cache_dir=marathon_dir / "noop",
        storage_dir=_path(here, _value(config, "marathon_storage")) or marathon_dir / "saved",
        json_path=_path(here, _value(config, "marathon_json")),
        report_path=_path(here, _value(config, "marathon_report")),
        openmetrics_path=_path(here, _value(config, "marathon_openmetrics")),
        save=save,
        compare=compare,
        compare_fail=tuple(rules),
        sign_key=sign_key,
        **_metering(config, here),
        **_model_recording(config, here),
        require_isolation=require_isolation,
        serve_api=bool(config.getoption("marathon_serve_api", False)),
        seed_salt=_seed_salt(config),
    )


def _metering(config: pytest.Config, here: Path) -> dict[str, Any]:
    """The budget and the price table, checked now so a bad one stops pytest before any run."""
    from pytest_marathon.metering import PriceTableError, load_price_table, parse_max_cost

    try:
        max_cost = parse_max_cost(_value(config, "marathon_max_cost"), DEFAULT_MAX_COST_USD)
    except ValueError as exc:
        raise pytest.UsageError(f"--marathon-max-cost: {exc}") from None
    table = _path(here, _value(config, "marathon_price_table"))
    if table is not None:
        try:
            load_price_table(table)
        except PriceTableError as exc:
            raise pytest.UsageError(f"--marathon-price-table: {exc}") from None
    model = (_value(config, "marathon_model") or "").strip() or None
    return {"max_cost_usd": max_cost, "price_table": table, "model": model}


def _model_recording(config: pytest.Config, here: Path) -> dict[str, Path | None]:
    """Record or replay folders, checked now: both at once, or a replay folder that does not
    exist, stop pytest before any run."""
    from pytest_marathon.metering.exchanges import check_folders
    from pytest_marathon.metering.recording import RecordingError

    record = _path(here, _value(config, "marathon_record_model"))
    replay = _path(here, _value(config, "marathon_replay_model"))
    try:
        check_folders(record, replay, record_option="--marathon-record-model",
                      replay_option="--marathon-replay-model")
    except RecordingError as exc:
        raise pytest.UsageError(str(exc)) from None
    return {"record_model": record, "replay_model": replay}


def _check_agent(spec: str, require_isolation: bool = False) -> None:
    from pytest_marathon.agents import resolve_agent
    from pytest_marathon.isolation.levels import IsolationRequired
    from pytest_marathon.isolation.levels import require_isolation as check

    try:
        agent = resolve_agent(spec)
    except ValueError as exc:  # the registry's message names the choices
        raise pytest.UsageError(f"--agent: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - a broken agent must not be an internal error
        raise pytest.UsageError(
            f"--agent: agent {spec!r} could not be created: {type(exc).__name__}: {exc}"
        ) from None
    if require_isolation:
        try:
            check(agent, "--marathon-require-isolation")
        except IsolationRequired as exc:
            raise pytest.UsageError(str(exc)) from None


def _check_scenario(scenario: str) -> None:
    """A scenario file is parsed now, so a broken one stops pytest before any run starts."""
    from pytest_marathon.faults.scenario import ScenarioError, load_scenario

    try:
        load_scenario(scenario)
    except ScenarioError as exc:
        raise pytest.UsageError(f"--marathon-scenario: {exc}") from None


def _sign_key(path: Path | None) -> Any:
    from pytest_marathon.bundle import KeyFileError, load_private_key

    if path is None:
        return None
    try:
        return load_private_key(path)
    except KeyFileError as exc:
        raise pytest.UsageError(f"--marathon-sign-key: {exc}") from None


def _seed_salt(config: pytest.Config) -> str | None:
    from pytest_marathon.seed_salt import SEED_SALT_ENV, SeedSaltError, check_salt

    given = config.getoption("marathon_seed_salt")
    source = "--marathon-seed-salt"
    if given is None:
        given, source = os.environ.get(SEED_SALT_ENV) or None, SEED_SALT_ENV
    if given is None:
        return None
    try:
        return check_salt(given)
    except SeedSaltError as exc:
        raise pytest.UsageError(f"{source}: {exc}") from None


def _number(config: pytest.Config, ini: str, option: str) -> float | None:
    raw = _value(config, ini)
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        raise pytest.UsageError(f"{option}: {raw!r} is not a number") from None


def _failure_fraction(config: pytest.Config) -> float:
    raw = _value(config, "marathon_max_failed_invocations") or DEFAULT_MAX_FAILED_INVOCATIONS
    try:
        return parse_failure_fraction(raw)
    except ValueError as exc:
        raise pytest.UsageError(f"--marathon-max-failed-invocations: {exc}") from None


def _path(here: Path, raw: str | None) -> Path | None:
    """Relative paths are taken from where pytest was invoked, as `--junitxml` does."""
    if not raw:
        return None
    path = Path(raw)
    return path if path.is_absolute() else here / path


def _backend_options(config: pytest.Config) -> tuple[tuple[str, str], ...]:
    """The kubernetes backend's cluster: kubeconfig, context (the cluster fixtures' option),
    Prometheus and Jaeger URLs, registry; empty for the twin-backed default."""
    values = {
        "kubeconfig": _value(config, "marathon_kubeconfig"),
        "context": config.getoption("marathon_context", default=None),
        "prometheus_url": _value(config, "marathon_prometheus_url"),
        "jaeger_url": _value(config, "marathon_jaeger_url"),
        "registry": _value(config, "marathon_registry"),
    }
    return tuple(sorted((k, str(v)) for k, v in values.items() if v))
