"""`pytest-marathon run` (one scored marathon) and `pytest-marathon report` (HTML from bundles)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_marathon.config import (
    BACKENDS,
    DEFAULT_BACKEND,
    DEFAULT_BUDGET_S,
    DEFAULT_DELTA_S,
    DEFAULT_SCENARIO,
)
from pytest_marathon.marathon_apps import marathon_app_problem, marathon_apps
from pytest_marathon.results import (
    DEFAULT_MAX_FAILED_INVOCATIONS,
    format_invocations,
    invocation_failure,
    parse_failure_fraction,
)
from pytest_marathon.run import saves
from pytest_marathon.run.baseline import DEFAULT_CACHE_DIR


def register(subparsers: Any) -> None:
    run = subparsers.add_parser("run", help="run one marathon and print its scored summary")
    run.add_argument(
        "--app", required=True, help=f"application twin: {', '.join(marathon_apps())}"
    )
    run.add_argument(
        "--agent",
        required=True,
        help='built-in name, module:Class or cmd:"..." (pytest-marathon agents lists them)',
    )
    run.add_argument(
        "--seed",
        required=True,
        help="seed, range 1-3 or list 1,4 (several seeds run one after another)",
    )
    run.add_argument(
        "--scenario",
        default=DEFAULT_SCENARIO,
        help=f"scenario name or YAML path (default {DEFAULT_SCENARIO}; pytest-marathon scenarios)",
    )
    run.add_argument("--backend", default=DEFAULT_BACKEND, choices=BACKENDS, help="where it runs")
    for flag, help_text in (
        ("--kubeconfig", "kubernetes backend: the cluster's kubeconfig (none: a twin behind its own API)"),
        ("--context", "kubernetes backend: the kubeconfig context"),
        ("--prometheus-url", "kubernetes backend: the cluster's Prometheus"),
        ("--jaeger-url", "kubernetes backend: the cluster's Jaeger query service (traces)"),
        ("--registry", "kubernetes backend: image registry for code faults (none: they are skipped)"),
    ):
        run.add_argument(flag, default=None, help=help_text)
    run.add_argument("--out", type=Path, default=Path("marathon-bundles"), help="bundle folder")
    run.add_argument(
        "--delta",
        type=float,
        default=DEFAULT_DELTA_S,
        help=f"virtual seconds between agent invocations (default {DEFAULT_DELTA_S:g})",
    )
    run.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET_S,
        help=f"wall-clock budget of one invocation, s (default {DEFAULT_BUDGET_S:g})",
    )
    run.add_argument(
        "--baseline-cache",
        type=Path,
        default=DEFAULT_CACHE_DIR,
        help="where noop baselines are cached (default .marathon/noop)",
    )
    run.add_argument(
        "--sign-key",
        type=Path,
        metavar="FILE",
        help="sign the bundle with this Ed25519 private key (pytest-marathon keygen)",
    )
    run.add_argument(
        "--max-failed-invocations",
        default=DEFAULT_MAX_FAILED_INVOCATIONS,
        metavar="SHARE",
        help="exit 1 when more than this share of invocations did not end ok: a percentage (25%%)"
        " or a fraction (0.25); default 25%%",
    )
    run.add_argument(
        "--max-cost",
        default=None,
        metavar="USD",
        help="model budget of the run in USD, enforced by the metering proxy: once spent, "
        "further model calls are refused (default 8; none for no budget)",
    )
    run.add_argument(
        "--price-table",
        type=Path,
        metavar="FILE",
        help="YAML price table (USD per million tokens per model) replacing the built-in one",
    )
    run.add_argument(
        "--model",
        metavar="NAME",
        help="model the model-based agents ask (MARATHON_MODEL for the run; recorded in the "
        "manifest)",
    )
    run.add_argument(
        "--require-isolation",
        action="store_true",
        help="refuse to start unless the agent runs in the bubblewrap sandbox (built-in "
        "baselines excepted)",
    )
    run.add_argument(
        "--seed-salt",
        metavar="SALT",
        help="secret salt the fault schedule is drawn with (default: $MARATHON_SEED_SALT); the "
        "bundle commits to it and reveals it at sealing. Prefer the variable: an argument shows "
        "in the process list",
    )
    run.add_argument(
        "--serve-api",
        action="store_true",
        help="while the run is recorded, serve the Kubernetes and Prometheus APIs over its live "
        "backend, read-only (addresses and kubeconfig printed on stderr; the agent cannot reach them)",
    )
    run.add_argument(
        "--record-model",
        type=Path,
        metavar="DIR",
        help="record every model exchange of the run in DIR/<run id>.jsonl",
    )
    run.add_argument(
        "--replay-model",
        type=Path,
        metavar="DIR",
        help="answer the run's model calls from DIR/<run id>.jsonl (no upstream, no network); "
        "a request the recording does not hold fails the run",
    )
    saves.add_arguments(run)
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    run.add_argument(
        "--alerts",
        type=int,
        default=20,
        metavar="N",
        help="how many entries of the alert history to print (default 20; 0 for none)",
    )
    run.set_defaults(func=_run)

    report = subparsers.add_parser("report", help="write the HTML report of bundles")
    report.add_argument("bundles", nargs="+", type=Path, metavar="BUNDLE", help="run bundles")
    report.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("marathon-report.html"),
        help="HTML file to write (default marathon-report.html)",
    )
    report.add_argument(
        "--baseline-cache",
        type=Path,
        default=DEFAULT_CACHE_DIR,
        help="noop baselines to score degradation against, when cached",
    )
    report.set_defaults(func=_report)


def _run(args: argparse.Namespace) -> int:
    """One marathon per seed, one after another; the exit code is the worst of them. Ctrl-C or
    SIGTERM stops it with 130 or 143 and one line (the bundle of a run it stopped is closed
    incomplete; the summaries of the seeds that finished were printed as they finished)."""
    from pytest_marathon.run.stopping import StopSignals, Terminated

    try:
        with StopSignals():
            return _run_seeds(args)
    except (KeyboardInterrupt, Terminated) as exc:
        name = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
        print(f"pytest-marathon: interrupted ({name}) while no run was being recorded", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130


def _run_seeds(args: argparse.Namespace) -> int:
    from pytest_marathon.config import ConfigError, parse_seeds

    problem = marathon_app_problem(args.app)
    if problem is not None:
        return _fail(problem)
    try:
        seeds = parse_seeds([args.seed])
    except ConfigError as exc:
        return _fail(f"--seed: {exc}")
    from pytest_marathon.storage import StorageError

    try:
        saved = saves.check(args)  # before any run: a bad name or a missing save costs none
    except StorageError as exc:
        return _fail(str(exc))
    from pytest_marathon.metering.exchanges import check_folders
    from pytest_marathon.metering.recording import RecordingError

    try:
        check_folders(args.record_model, args.replay_model, record_option="--record-model",
                      replay_option="--replay-model")
    except RecordingError as exc:
        return _fail(str(exc))
    results: list[Any] = []
    finished: list[Any] = []
    worst = 0
    for seed in seeds:
        code = _run_seed(args, seed, results, finished)
        worst = max(worst, code)
        if code not in (0, 1):  # a usage error or an interrupt stops the remaining seeds
            return code
    if args.json:
        payload = results[0] if len(results) == 1 else results
        print(json.dumps(payload, indent=2, sort_keys=True))
    lines, warnings = saves.finish(args, finished, saved)
    if lines:  # with --json, stdout stays one JSON document
        print("\n".join(lines), file=sys.stderr if args.json else sys.stdout)
    for warning in warnings:
        print(f"pytest-marathon: {warning}", file=sys.stderr)
    return worst


def _run_seed(
    args: argparse.Namespace, seed: int, results: list[Any], finished: list[Any]
) -> int:
    from pytest_marathon.bundle import KeyFileError, load_private_key
    from pytest_marathon.config import RunConfig
    from pytest_marathon.run.progress import TerminalProgress
    from pytest_marathon.runner import MarathonInterrupted, run_marathon

    try:
        max_failed = parse_failure_fraction(args.max_failed_invocations)
    except ValueError as exc:
        return _fail(f"--max-failed-invocations: {exc}")
    try:
        sign_key = None if args.sign_key is None else load_private_key(args.sign_key)
    except KeyFileError as exc:  # before anything runs or is written
        return _fail(f"--sign-key: {exc}")
    if args.require_isolation:
        from pytest_marathon.agents import resolve_agent
        from pytest_marathon.isolation.levels import require_isolation

        try:
            require_isolation(resolve_agent(args.agent), "--require-isolation")
        except ValueError as exc:
            return _fail(str(exc))
    from pytest_marathon.metering import (
        DEFAULT_MAX_COST_USD,
        PriceTableError,
        load_price_table,
        parse_max_cost,
    )

    try:
        max_cost = parse_max_cost(args.max_cost, DEFAULT_MAX_COST_USD)
    except ValueError as exc:
        return _fail(f"--max-cost: {exc}")
    try:
        if args.price_table is not None:
            load_price_table(args.price_table)
    except PriceTableError as exc:
        return _fail(f"--price-table: {exc}")
    previous = None
    try:
        config = RunConfig(
            app=args.app,
            agent=args.agent,
            seed=seed,
            scenario=args.scenario,
            backend=args.backend,
            backend_options=tuple(sorted(
                (k, v) for k in ("kubeconfig", "context", "prometheus_url", "jaeger_url", "registry")
                if (v := getattr(args, k)) is not None
            )),
            out_dir=args.out,
            delta_s=args.delta,
            budget_s=args.budget,
            max_cost_usd=max_cost,
            price_table=args.price_table,
            model=args.model,
            seed_salt=_seed_salt(args.seed_salt),
            record_model=args.record_model,
            replay_model=args.replay_model,
        )
        if config.bundle_dir.exists():  # the runner keeps it as `<run id>.prev`
            previous = config.bundle_dir
        result = run_marathon(
            config,
            progress=TerminalProgress(sys.stderr),
            baseline_cache=args.baseline_cache,
            sign_key=sign_key,
            isolation_required=args.require_isolation,
            serve_api=_serve_api(args),
        )
    except ValueError as exc:  # bad config or agent spec (ConfigError, IsolationRequired)
        return _fail(str(exc))
    except MarathonInterrupted as stop:
        print(f"pytest-marathon: {stop}", file=sys.stderr)
        return stop.exit_code
    if previous is not None:
        print(f"pytest-marathon: the earlier bundle was kept as {previous}.prev", file=sys.stderr)
    if args.json:
        results.append(result.to_json())
    else:
        print(summary(result))
        if args.alerts > 0:
            print(_alert_history(result.bundle, args.alerts))
    finished.append(result)
    if result.replay_mismatch is not None:
        print(f"pytest-marathon: {result.replay_mismatch}", file=sys.stderr)
        return 1
    verdict = invocation_failure(result, max_failed, "--max-failed-invocations")
    if verdict is not None:  # the summary is still printed: the bundle is evidence either way
        print(f"pytest-marathon: {verdict}", file=sys.stderr)
        return 1
    return 0


def _serve_api(args: argparse.Namespace) -> Any:
    if not args.serve_api:
        return None
    from pytest_marathon.run.live_api import ServeApi

    return ServeApi(announce=lambda line: print(f"pytest-marathon: {line}", file=sys.stderr, flush=True))


def _seed_salt(given: str | None) -> str | None:
    """The salt from `--seed-salt`, else from the environment; an empty variable means none."""
    import os

    from pytest_marathon.seed_salt import SEED_SALT_ENV

    return given if given is not None else os.environ.get(SEED_SALT_ENV) or None


def summary(result: Any) -> str:
    """The scored summary `run` prints: what ran, the leaderboard row, outcomes, invocations."""
    from pytest_marathon.results import format_leaderboard, leaderboard

    lines = [
        f"{result.agent} on {result.app}, scenario {result.scenario}, seed {result.seed}",
        f"bundle: {result.bundle}",
        "",
        format_leaderboard(leaderboard([result])),
        "",
        "fault outcomes: "
        + (", ".join(f"{k} {v}" for k, v in result.outcome_counts().items()) or "no faults"),
        f"invocations ok: {format_invocations(result.invocations_ok, result.invocations_total)}"
        + "".join(
            f", {status} {n}" for status, n in sorted(result.invocations.items()) if status != "ok"
        ),
        *_metering_line(result.score_report.get("cost") or {}),
    ]
    return "\n".join(lines)


def _metering_line(cost: dict[str, Any]) -> list[str]:
    """What the metering proxy refused or could not price, when it did (else nothing)."""
    notes = []
    if cost.get("refused_calls"):
        notes.append(f"{cost['refused_calls']} model calls refused: the run's budget was spent")
    if cost.get("unpriced_models"):
        notes.append("tokens of models without a price (not in $): " + ", ".join(cost["unpriced_models"]))
    return [f"metering: {'; '.join(notes)}"] if notes else []


def _alert_history(bundle: Path, limit: int) -> str:
    """The alerts the agent saw, as an on-call engineer would skim them: when each fired, what it
    names, and when it resolved. A quiet run must show an empty history, not just a score."""
    from pytest_marathon.bundle import read_bundle
    from pytest_marathon.vocabulary import workload_of

    events = read_bundle(bundle, allow_incomplete=True).stream("alerts")
    resolved = {e["alert_id"]: e["t"] for e in events if e.get("event") == "resolved"}
    fired = [e for e in events if e.get("event") == "firing"]
    lines = [f"alert history: {len(fired)} fired, {len(resolved)} resolved"]
    for alert in fired[:limit]:
        end = resolved.get(alert["alert_id"])
        until = f"resolved at {end:g}s" if end is not None else "still firing"
        labels = alert.get("labels", {})
        lines.append(
            f"  {alert['t']:>7g}s  {alert['alertname']:<34} {workload_of(labels) or '-':<22} "
            f"{labels.get('severity', '-'):<8} {until}"
        )
    if len(fired) > limit:
        lines.append(f"  ... {len(fired) - limit} more (raise --alerts, or read {bundle}/alerts.jsonl)")
    return "\n".join(lines)


def _report(args: argparse.Namespace) -> int:
    from pytest_marathon.bundle import BundleError
    from pytest_marathon.report import result_from_bundle, write_report
    from pytest_marathon.scoring import ScoreRefusal

    try:
        results = [result_from_bundle(path, args.baseline_cache) for path in args.bundles]
    except (BundleError, OSError, ValueError, ScoreRefusal) as exc:
        return _fail(str(exc))
    write_report(args.output, results)
    print(f"report written to {args.output}")
    return 0


def _fail(message: str) -> int:
    print(f"pytest-marathon: error: {message}", file=sys.stderr)
    return 2
