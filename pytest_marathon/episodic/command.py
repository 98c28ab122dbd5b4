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
    parser.add_argument("--agent", default="oracle", help="oracle, always-no or module:Class (default oracle)")
    parser.add_argument("--out", type=Path, default=Path(".marathon/episodes"), help="where bundles go")
    parser.add_argument("--score", type=Path, metavar="BUNDLE", help="print the score document of an episode bundle")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pytest_marathon.bundle import BundleError
    from pytest_marathon.config import available_apps
    from pytest_marathon.episodic import problem_pool, run_problem
    from pytest_marathon.episodic.problems import find_problem
    from pytest_marathon.episodic.recording import score_episode

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
    out = args.out / args.agent.replace(":", "_")
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
