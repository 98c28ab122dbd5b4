"""The marathon loop: the world advances tick by tick, the agent acts every Δ, evidence is recorded.

The order inside a tick is fixed so a run is a pure function of (release, app, scenario, seed, the
agent's decisions): the orchestrator injects and reverts due faults, the live system runs to t,
agent changes whose rollout finished get their completion record, the entry-point SLI is recorded, and every 15 s alerts are evaluated and probes sampled. Every Δ
from t = 0 the world pauses while the agent works; its actions take effect at that virtual time.
Nothing is scored live: the sealed bundle is scored afterwards exactly as `pytest-marathon score`
would score it.

The answers stay out of the agent's reach: the schedule stream is held in the recorder's memory
and written only when the bundle is sealed or closed incomplete, and the agent's workspace is a
private temporary directory (mode 0700) outside the output folder, removed after the run, so
walking up from the workspace leads nowhere near a live bundle. Agents whose code runs in a
process of its own (plug-ins in their child, `cmd:` programs, CLI presets) get the run's sandbox
on their context (`pytest_marathon.isolation`), which also hides the output folder and the
baseline cache; the manifest records the isolation level reached.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pytest_marathon import RELEASE
from pytest_marathon.agents import InvocationContext, resolve_agent, wants_ground_truth
from pytest_marathon.agents.registry import is_built_in
from pytest_marathon.alerting import AlertEngine, load_rule_pack
from pytest_marathon.backends import create_backend
from pytest_marathon.bundle import Recorder
from pytest_marathon.config import ALERT_EVERY_S, ConfigError, RunConfig
from pytest_marathon.faults import Orchestrator, load_catalog, load_scenario, schedule_for
from pytest_marathon.faults.backend_support import drop_unsupported
from pytest_marathon.interface import InProcessClient, ToolSession
from pytest_marathon.isolation.levels import RunIsolation, isolation_level, require_isolation
from pytest_marathon.metering.runs import prepare_exchanges, start_metering, usage_record
from pytest_marathon.results import MarathonResult, replay_mismatch
from pytest_marathon.run.baseline import DEFAULT_CACHE_DIR, NOOP_AGENT, cached_noop_bundle
from pytest_marathon.run.completions import CompletionTracker
from pytest_marathon.run.invoke import RevocableTools, call_with_budget
from pytest_marathon.run.live_api import ServeApi, start_live_apis
from pytest_marathon.run.model_choice import model_environment
from pytest_marathon.run.previous import keep_previous
from pytest_marathon.run.progress import ProgressSink, ProgressState, SilentProgress
from pytest_marathon.run.stopping import StopSignals, Terminated, stop_exception
from pytest_marathon.scoring import score_bundle


class MarathonInterrupted(KeyboardInterrupt):
    """The run was stopped (Ctrl-C or SIGTERM); `bundle` holds the valid, incomplete evidence.

    A KeyboardInterrupt so that pytest stops the session as it does for Ctrl-C."""

    def __init__(
        self, bundle: Path, reason: str, exit_code: int, *, recorded: bool = True,
        complete: bool = False,
    ) -> None:
        if not recorded:
            where = "before its bundle was started"
        elif complete:
            where = f"while it was scored; its bundle is complete: {bundle}"
        else:
            where = f"incomplete bundle at {bundle}"
        super().__init__(f"marathon interrupted ({reason}); {where}")
        self.bundle = bundle
        self.reason = reason
        self.exit_code = exit_code
        self.recorded = recorded  # False: stopped before the bundle existed (none was written)
        self.complete = complete  # True: the run was recorded whole, its scoring was stopped


def run_marathon(
    config: RunConfig,
    *,
    agent: Any | None = None,
    progress: ProgressSink | None = None,
    baseline_cache: Path | None = DEFAULT_CACHE_DIR,
    score: bool = True,
    sign_key: Ed25519PrivateKey | None = None,
    isolation_required: bool = False,
    serve_api: ServeApi | None = None,
) -> MarathonResult:
    """Run one marathon, seal its bundle and score it against the cached noop baseline.

    `agent` overrides resolving `config.agent`; `baseline_cache=None` scores without a
    degradation baseline (degradation level left empty); `score=False` only writes the bundle.
    `sign_key` signs the bundle at sealing (and a noop baseline this run has to record). It is
    not part of `config`: who vouches for a run does not change what the run is.
    `isolation_required` refuses (IsolationRequired, a ValueError) an agent that would run below
    the sandbox, built-in baselines excepted. `serve_api` serves the Kubernetes and Prometheus
    APIs read-only over the live backend while the run is recorded (`run.live_api`); like
    signing, watching does not change what the run is.
    """
    hidden = () if baseline_cache is None else (Path(baseline_cache),)
    bundle = record_marathon(
        config, agent=agent, progress=progress, sign_key=sign_key, hidden=hidden,
        isolation_required=isolation_required, serve_api=serve_api,
    )
    if not score:
        return MarathonResult(
            config.app, config.agent, config.scenario, config.seed, config.backend, bundle, {},
            replay_mismatch=replay_mismatch(bundle),
        )
    try:
        return score_run(
            config, bundle, baseline_cache=baseline_cache, sign_key=sign_key, progress=progress
        )
    except (KeyboardInterrupt, Terminated) as exc:
        if isinstance(exc, MarathonInterrupted):  # from recording a missing noop baseline
            raise
        raise _interrupted(config, exc, complete=True) from None


def score_run(
    config: RunConfig,
    bundle: Path,
    *,
    baseline_cache: Path | None,
    sign_key: Ed25519PrivateKey | None = None,
    progress: ProgressSink | None = None,
) -> MarathonResult:
    """Score a sealed bundle; the noop baseline comes from the cache (computed on first use,
    signed with `sign_key` when given, its progress shown on `progress`: a first run's baseline
    is a whole second marathon, and a silent pause of that length looks like a hang).

    A noop run is its own baseline: it seeds the cache with a copy of itself when the cache has
    none, and its result names the cached baseline like every other run's, so a result never
    depends on which run of a grid (or which xdist worker) filled the cache."""
    noop: Path | None = None
    if baseline_cache is not None:
        fill = _copy_of(bundle) if config.agent == NOOP_AGENT else _noop_recorder(sign_key, progress)
        noop = cached_noop_bundle(config, baseline_cache, fill)
    elif config.agent == NOOP_AGENT:
        noop = bundle
    report = score_bundle(bundle, noop=noop)
    data: Mapping[str, Any] = report if isinstance(report, Mapping) else report.to_json()
    return MarathonResult.from_score(config, bundle, data, noop_bundle=noop)


def record_noop(config: RunConfig) -> Path:
    return record_marathon(config)


def _noop_recorder(
    sign_key: Ed25519PrivateKey | None, progress: ProgressSink | None = None
) -> Callable[[RunConfig], Path]:
    return lambda noop: record_marathon(noop, sign_key=sign_key, progress=progress)


def _copy_of(bundle: Path) -> Callable[[RunConfig], Path]:
    """A baseline writer that copies an already sealed noop bundle instead of re-running it."""

    def copy(noop: RunConfig) -> Path:
        shutil.copytree(bundle, noop.bundle_dir)
        return noop.bundle_dir

    return copy


def record_marathon(
    config: RunConfig,
    *,
    agent: Any | None = None,
    progress: ProgressSink | None = None,
    sign_key: Ed25519PrivateKey | None = None,
    hidden: tuple[Path, ...] = (),
    isolation_required: bool = False,
    serve_api: ServeApi | None = None,
) -> Path:
    """Run the loop and write the sealed bundle (signed with `sign_key`); returns its directory.

    `hidden`: folders, besides the output folder, that the agent's sandbox hides (the baseline
    cache).

    On Ctrl-C or SIGTERM the bundle is closed as incomplete and `MarathonInterrupted` raised; on
    any other error it is closed as incomplete with the error as reason and the error re-raised.
    """
    if sign_key is not None and not isinstance(sign_key, Ed25519PrivateKey):
        raise TypeError(f"sign_key must be an Ed25519PrivateKey, got {type(sign_key).__name__}")
    agent = agent if agent is not None else resolve_agent(config.agent)
    if isolation_required:
        require_isolation(agent, "isolation required")
    exchanges = prepare_exchanges(agent, config)  # a missing recording: nothing written yet
    _check_bundle_folder(Path(config.out_dir))
    if exchanges is not None:  # the agent reads neither its recorded answers nor other runs'
        hidden = (*hidden, *(Path(p) for p in (config.record_model, config.replay_model) if p))
    stops = StopSignals()
    marathon = _Marathon(
        config, agent, progress or SilentProgress(), sign_key=sign_key, hidden=hidden, stops=stops,
        serve_api=serve_api, exchanges=exchanges,
    )
    with stops, model_environment(config.model):
        try:
            marathon.run()
        except (KeyboardInterrupt, Terminated) as exc:
            # closing is not interrupted: a second signal there would leave a bundle half-closed
            with stops.deferred(raise_pending=False):
                marathon.close_incomplete(_reason(exc))
            raise _interrupted(config, exc, recorded=marathon.recorder is not None) from None
        except BaseException as exc:
            with stops.deferred(raise_pending=False):
                marathon.close_incomplete(f"error: {type(exc).__name__}: {exc}")
            if stops.pending is not None:
                raise _interrupted(
                    config, stop_exception(stops.pending), recorded=marathon.recorder is not None
                ) from exc
            raise
    return config.bundle_dir


def _reason(exc: BaseException) -> str:
    return "SIGTERM" if isinstance(exc, Terminated) else "interrupted (SIGINT)"


def _interrupted(
    config: RunConfig, exc: BaseException, *, recorded: bool = True, complete: bool = False
) -> MarathonInterrupted:
    code = 143 if isinstance(exc, Terminated) else 130
    return MarathonInterrupted(
        config.bundle_dir, _reason(exc), code, recorded=recorded, complete=complete
    )


def _check_bundle_folder(folder: Path) -> None:
    """Refuse a folder bundles cannot be written to before the twin warms up, in words."""
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"bundle folder {folder} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the bundle folder {folder}: {exc.strerror or exc}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"cannot write in the bundle folder {folder}")


#: Streams the recorder keeps in memory until the bundle is finished: the answer key.
HELD_STREAMS = ("schedule", "releases")


def _private_workspace() -> Path:
    """A fresh workspace for one run: `mkdtemp` creates it with mode 0700 under the system's
    temporary directory, never under the output folder, and its random name says nothing about
    the run or where its bundle lives, so an agent cannot walk from it to the evidence."""
    return Path(tempfile.mkdtemp(prefix="marathon-ws-"))


@dataclass
class _Marathon:
    config: RunConfig
    agent: Any
    progress: ProgressSink
    sign_key: Ed25519PrivateKey | None = None
    recorder: Any = None
    completions: CompletionTracker | None = None
    active: dict[str, float] = field(default_factory=dict)
    firing: set[str] = field(default_factory=set)
    injected: list[dict[str, Any]] = field(default_factory=list)
    metering: Any = None  # the run's metering proxy; None for an agent that uses no model
    exchanges: Any = None  # the proxy's record or replay mode (metering.exchanges); None: neither
    hidden: tuple[Path, ...] = ()
    isolation: RunIsolation | None = None
    stops: StopSignals = field(default_factory=StopSignals)
    session: Any = None
    serve_api: ServeApi | None = None

    def run(self) -> None:
        config = self.config
        scenario = load_scenario(config.scenario)
        catalog = load_catalog(config.app)
        schedule = schedule_for(config.app, scenario, config.seed, catalog, salt=config.run_salt)
        backend = create_backend(config.app, config.seed, backend=config.backend, users=config.users,
                                 **dict(config.backend_options))
        schedule = drop_unsupported(schedule, backend)  # e.g. code faults without a registry
        orchestrator = Orchestrator(backend, schedule)
        promql = getattr(backend, "promql", None)  # a backend without a store brings its evaluator
        engine = AlertEngine(load_rule_pack(config.app), backend.store, backend.namespace, promql=promql)
        bundle = config.bundle_dir
        bundle.parent.mkdir(parents=True, exist_ok=True)
        # `schedule` and a salted run's salt are held: ground truth reaches the disk only at
        # sealing or closing (the manifest commits to the salt from the start).
        reveal = {} if config.run_salt is None else {"seed_salt": config.run_salt}
        with self.stops.deferred():  # a folder exists only with its first manifest written
            keep_previous(bundle)  # never deleted: the run it replaces stays as `<run id>.prev`
            self.recorder = Recorder(
                bundle, self._manifest(backend.namespace), sign_key=self.sign_key, hold=HELD_STREAMS, reveal=reveal
            )
        self.completions = CompletionTracker(backend)
        # tool calls may come from an agent's thread or the MCP server's: they are recorded only
        # while the bundle is open, and one arriving after it was closed is dropped
        session = ToolSession(
            backend, alerts=engine.history, sink=self._append_late, mutation_cap=config.mutation_cap,
            promql=promql,
        )
        self.session = session
        client = InProcessClient(session)
        self.metering = start_metering(self.agent, config, self.exchanges)
        server = None
        if getattr(self.agent, "needs_mcp", False):
            # the MCP SDK (and pydantic under it) loads only for an agent that speaks MCP: an
            # in-process agent's run starts about a second sooner without it
            from pytest_marathon.interface import serve_http

            # a fixed port only when the agent asks for one (`pytest-marathon mcp --speed`)
            server = serve_http(session, int(getattr(self.agent, "mcp_port", 0)))
        apis = None if self.serve_api is None else start_live_apis(
            backend, config.app, session.turn, engine, self.serve_api)
        # with the APIs served, the twin steps under the lock their reads and the tool calls hold
        stepping = session.turn if apis is not None else contextlib.nullcontext()
        try:
            workspace = _private_workspace()
            hidden = (config.out_dir, *self.hidden, *(() if apis is None else (apis.folder,)))
            self.isolation = RunIsolation(self.agent, workspace, hidden)
        except BaseException:
            if apis is not None:
                apis.close()
            raise
        tick = float(backend.tick_seconds)
        horizon = float(scenario.duration_s)
        invocations = int(horizon // config.delta_s)
        t = -float(scenario.warmup_s)
        last_sli = t
        n = 0
        try:
            while t < horizon:
                with stepping:
                    t = round(t + tick, 6)
                    for record in orchestrator.step(t):
                        self._append("schedule", record)
                        self.injected.append(record)
                    for record in orchestrator.take_releases():
                        self._append("releases", record)
                    backend.advance_to(t)
                    for completion in self.completions.completed(t):
                        self._append("interventions", completion)
                    for sample in backend.sli_samples(since=last_sli):
                        if sample.t > last_sli:
                            self._append("sli", _sli_record(sample))
                            last_sli = sample.t
                    if t % ALERT_EVERY_S == 0:
                        for alert in engine.evaluate(t):
                            self._append("alerts", alert)
                        if t >= 0:
                            for probe in orchestrator.probe_samples(t):
                                self._append("probes", probe)
                if t >= 0 and t % config.delta_s == 0 and n < invocations:
                    n += 1
                    self._show(t, horizon, n, invocations)
                    self._invoke(n, t, engine, session, client, workspace, server)
                elif t % 60 == 0:
                    self._show(t, horizon, n, invocations)
        finally:
            if apis is not None:
                apis.close()
            self.isolation.close()
            orchestrator.finish()
            if hasattr(backend, "close"):  # servers a backend started for itself
                backend.close()
            if self.recorder is not None and self.recorder.state == "running":
                for record in orchestrator.take_releases():
                    self._append("releases", record)
            if server is not None:
                server.close()
            if self.metering is not None:
                self.metering.close()
            shutil.rmtree(workspace, ignore_errors=True)
        with self.stops.deferred():  # sealed whole; a signal meanwhile is raised right after
            self.recorder.seal()
        self.progress.finish("")

    def close_incomplete(self, reason: str) -> None:
        """Close the bundle as incomplete: first refuse further tool calls (waiting for one in
        flight, so its records are in), then close; the recorder drops anything later."""
        if self.session is not None:
            self.session.end_invocation()
        self.progress.finish(f"{self.config.run_id}: stopped ({reason})")
        if self.recorder is not None and self.recorder.state == "running":
            self.recorder.close_incomplete(reason)

    def _invoke(
        self,
        n: int,
        t: float,
        engine: Any,
        session: Any,
        client: Any,
        workspace: Path,
        server: Any,
    ) -> None:
        config = self.config
        tools = RevocableTools(client, n)
        ground_truth = (
            [dict(record) for record in self.injected]
            if wants_ground_truth(self.agent)
            else None
        )
        ctx = InvocationContext(
            n=n,
            t=t,
            alerts=engine.history(),
            tools=tools,
            workspace=workspace,
            budget_s=config.budget_s,
            deadline=time.monotonic() + config.budget_s,
            ground_truth=ground_truth,
            mcp_url=getattr(server, "url", None),
            model_base_urls=dict(self.metering.base_urls) if self.metering is not None else {},
            namespace=engine.namespace,
        )
        ctx.sandbox = self.isolation.sandbox_for(ctx) if self.isolation is not None else None
        session.begin_invocation(n, t)
        if self.metering is not None:
            self.metering.begin_invocation(n)
        try:
            outcome = call_with_budget(
                lambda: self.agent.invoke(ctx),
                config.budget_s + self.isolation.kill_grace_s,
                agent=config.agent,
            )
        finally:
            tools.revoke()
            counts = session.end_invocation()
            # read whatever the outcome: calls that finished before a timeout or crash count
            metered = self.metering.end_invocation() if self.metering is not None else None
        usage = usage_record(outcome.usage, metered)
        self._append(
            "invocations",
            {
                "n": n,
                "t": t,
                "status": outcome.status,
                "wall_s": round(outcome.wall_s, 6),
                "calls": counts["calls"],
                "reads": counts["reads"],
                "actions": counts["actions"],
                "reports": counts["reports"],
                **usage,
                "detail": outcome.detail,
            },
        )

    def _append_late(self, stream: str, record: Mapping[str, Any]) -> None:
        """The tool session's sink: like `_append` while the bundle is open, a no-op after."""
        if self.recorder.state == "running":
            self._append(stream, record, late=True)

    def _append(self, stream: str, record: Mapping[str, Any], *, late: bool = False) -> None:
        if stream == "schedule":
            self.active[record["fault_id"]] = float(record["revert_at"])
        elif stream == "alerts":
            if record.get("event") == "firing":
                self.firing.add(record["alert_id"])
            else:
                self.firing.discard(record["alert_id"])
        elif stream == "interventions" and self.completions is not None:
            self.completions.watch(record)
        if late:
            self.recorder.try_append(stream, record)
        else:
            self.recorder.append(stream, record)

    def _show(self, t: float, horizon: float, n: int, invocations: int) -> None:
        active = sum(1 for revert_at in self.active.values() if revert_at > t)
        self.progress.update(
            ProgressState(self.config.run_id, t, horizon, active, len(self.firing), n, invocations)
        )

    def _manifest(self, namespace: str) -> dict[str, Any]:
        """Who ran what: `config` holds every setting the scorer's baseline rule compares
        (effective users, Δ, budget, cap, scenario/catalog/rule-pack digests). `namespace` is
        where the app ran: the scorer counts only that namespace's alerts. A signing key is not
        recorded: the signature file says who vouches for the bundle."""
        agent_name = getattr(self.agent, "name", None) or self.config.agent
        return {
            "release": RELEASE,
            "app": self.config.app,
            "namespace": namespace,
            "scenario": self.config.scenario,
            "seed": self.config.seed,
            "agent": self.config.agent,
            "agent_name": agent_name,
            "agent_flags": {
                "ground_truth": wants_ground_truth(self.agent),
                "built_in": is_built_in(self.agent),
                "isolation": isolation_level(self.agent),
            },
            "backend": self.config.backend,
            "config": self.config.manifest_config(),
        }


def _sli_record(sample: Any) -> dict[str, float]:
    return {
        "t": round(float(sample.t), 6),
        "q": round(float(sample.q), 6),
        "e": round(float(sample.e), 6),
        "l": round(float(sample.l), 6),
    }

