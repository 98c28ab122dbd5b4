"""`pytest-marathon episode`: run AIOpsLab problems from the command line, or score an episode
bundle again from its records."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EXIT_WRONG = 1
EXIT_REFUSED = 2


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "episode", help="run episodic problems (AIOpsLab) or score an episode bundle",
        description="Run AIOpsLab-style problems on the twin, or rescore a sealed episode bundle.")
    parser.add_argument("--app", action="append", default=None, help="application (default: every app with problems)")
    parser.add_argument("--problem", action="append", default=None, metavar="ID", help="problem id (repeatable)")
    parser.add_argument("--agent", default="oracle",
                        help="oracle, always-no, mksmc, pdiagnose, gpt-w-shell, module:Class, or over MCP: "
                        'codex, claude-code, cmd:"<command>" (default oracle)')
    parser.add_argument("--out", type=Path, default=Path(".marathon/episodes"), help="where bundles go")
    parser.add_argument("--score", type=Path, metavar="BUNDLE", help="print the score document of an episode bundle")
    parser.add_argument("--leaderboard", type=Path, nargs="+", metavar="JSON",
                        help="print the accuracy per agent and task of episodic --marathon-json files (merged)")
    parser.add_argument("--report", type=Path, metavar="HTML",
                        help="with --leaderboard: also write the HTML page of those results")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pytest_marathon.bundle import BundleError
    from pytest_marathon.config import available_apps
    from pytest_marathon.episodic import problem_pool, run_problem
    from pytest_marathon.episodic.problems import find_problem
    from pytest_marathon.episodic.recording import score_episode
    from pytest_marathon.episodic.session import agent_folder

    if args.leaderboard:
        return _leaderboard(args.leaderboard, args.report)
    if args.score is not None:
        try:
            print(json.dumps(score_episode(args.score), indent=1, sort_keys=True))
        except (BundleError, ValueError) as exc:
            print(f"pytest-marathon: error: {exc}", file=sys.stderr)
            return EXIT_REFUSED
        return 0
    apps = tuple(args.app or [a for a in available_apps() if problem_pool((a,))])
    try:
        problems = [find_problem(pid, apps) for pid in args.problem] if args.problem else problem_pool(apps)
    except ValueError as exc:
        print(f"pytest-marathon: error: --problem: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    wrong = ran = 0
    out = args.out / agent_folder(args.agent)
    for problem in problems:
        if problem.unsupported:
            print(f"{problem.pid:64} skipped: {problem.unsupported}")
            continue
        result = run_problem(problem, args.agent, out_dir=out, agent_name=args.agent)
        ran += 1
        wrong += not result.correct
        print(f"{problem.pid:64} {'correct' if result.correct else 'WRONG':8} steps {result.steps:2d}  "
              f"{json.dumps(result.details, sort_keys=True)}")
    print(f"{ran - wrong} of {ran} right; bundles in {out}")
    return EXIT_WRONG if wrong else 0


def _leaderboard(paths: list[Path], report: Path | None) -> int:
    from pytest_marathon.episodic.report import (
        format_leaderboard,
        load_episodes,
        write_episodic_report,
    )

    try:
        episodes = load_episodes(paths)
    except (OSError, ValueError, KeyError) as exc:
        print(f"pytest-marathon: error: --leaderboard: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    print(format_leaderboard(episodes))
    if report is not None:
        write_episodic_report(report, episodes)
        print(f"report written to {report}")
    return 0
