"""The leaderboard and HTML page of episodic results: accuracy per agent and task across the pool,
and a row per problem, from the score documents a session writes to `--marathon-json` (one file
or several, e.g. one per agent, merged), as the marathon's leaderboard is its runs' means.

An episode's TTx is its task's time: TTD for detection, TTL for localization, TTA for analysis,
TTM for mitigation (AIOpsLab's names), so each row fills the column of its task.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_marathon.episodic.problems import TASKS

LEADERBOARD_HEADER = ["Agent", "Task", "Problems", "Correct", "Accuracy %", "Mean steps", "Mean TTx s",
                      "Tokens", "Cost $"]
TTX = {"detection": "TTD", "localization": "TTL", "analysis": "TTA", "mitigation": "TTM"}
PROBLEM_HEADER = ["Problem", "Agent", "Task", "Correct", *(f"{TTX[t]} s" for t in TASKS), "Steps", "Tokens",
                  "Cost $", "Bundle"]


def load_episodes(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """The episodes of episodic `--marathon-json` files; an episode of the same agent and problem
    in a later file replaces the earlier one (a rerun)."""
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    for path in paths:
        doc = json.loads(Path(path).read_text())
        if doc.get("mode") != "episodic":
            raise ValueError(f"{path} holds no episodic results (mode {doc.get('mode')!r})")
        for episode in doc["episodes"]:
            by_key[(episode["agent"], episode["pid"])] = episode
    return [by_key[key] for key in sorted(by_key)]


def leaderboard(episodes: Iterable[Mapping[str, Any]]) -> list[list[str]]:
    """One row per agent and task, best accuracy first within a task."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for doc in episodes:
        groups.setdefault((doc["task"], doc["agent"]), []).append(doc)
    rows = []
    for (task, agent), docs in groups.items():
        right = sum(1 for d in docs if d["correct"])
        ttx = [float(d["ttx_s"]) for d in docs if d.get("ttx_s") is not None]
        tokens = sum(int(d.get("input_tokens", 0)) + int(d.get("output_tokens", 0)) for d in docs)
        rows.append((TASKS.index(task), -right / len(docs), agent, [
            agent, task, str(len(docs)), str(right), f"{100.0 * right / len(docs):.1f}",
            f"{sum(int(d['steps']) for d in docs) / len(docs):.1f}",
            f"{sum(ttx) / len(ttx):.1f}" if ttx else "-", str(tokens),
            f"{sum(float(d.get('cost_usd', 0.0)) for d in docs):.4f}"]))
    return [cells for *_, cells in sorted(rows, key=lambda r: r[:3])]


def problem_cells(doc: Mapping[str, Any]) -> list[str]:
    ttx = [f"{float(doc['ttx_s']):.0f}" if task == doc["task"] and doc.get("ttx_s") is not None else "-"
           for task in TASKS]
    return [doc["pid"], doc["agent"], doc["task"], "yes" if doc["correct"] else "no", *ttx, str(doc["steps"]),
            str(int(doc.get("input_tokens", 0)) + int(doc.get("output_tokens", 0))),
            f"{float(doc.get('cost_usd', 0.0)):.4f}"]


def format_leaderboard(episodes: Iterable[Mapping[str, Any]]) -> str:
    from pytest_marathon.spread import format_table

    return format_table(LEADERBOARD_HEADER, leaderboard(episodes))


def write_episodic_report(path: Path, episodes: Iterable[Mapping[str, Any]], title: str = "") -> None:
    """The page: the leaderboard, then every problem with a link to its bundle (relative to the
    report's folder, as the marathon report links its runs)."""
    from pytest_marathon import RELEASE
    from pytest_marathon.report import environment, relative_link

    path = Path(path)
    docs = sorted(episodes, key=lambda d: (d["agent"], TASKS.index(d["task"]), d["pid"]))
    rows = [{"cells": problem_cells(doc),
             "bundle": relative_link(Path(doc["bundle"]), path.parent) if doc.get("bundle") else None}
            for doc in docs]
    html = environment().get_template("episodic.html.j2").render(
        title=title or "pytest-marathon episodic report", release=RELEASE, columns=LEADERBOARD_HEADER,
        leaderboard=leaderboard(docs), problem_columns=PROBLEM_HEADER, episodes=rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
