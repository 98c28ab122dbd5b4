"""Self-recovery on real runs: a repair the no-action run does not make by itself is kept.

tests/test_adversaries.py shows the other side (short-5 seed 2): the alert-nudge attacker's
harmless scale-outs are paid for self-healing faults by the probe rule alone and withheld by
the counterfactual. Here the runbook on short-5 seed 1 rolls back bad code changes, faults that
fail in the noop run of the same schedule until their revert: its repairs keep their credit,
and the score checked against the baseline differs from the probe rule alone only where the
noop run's own probes say the fault had healed by the repair time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.config import RunConfig
from pytest_marathon.runner import run_marathon
from pytest_marathon.scoring import score_bundle


def probe_samples(bundle: Path, row: dict[str, Any]) -> list[dict[str, Any]]:
    """The fault's samples in [inject, revert), read straight from the bundle."""
    end = row["revert_at"] if row["revert_at"] is not None else float("inf")
    records = [json.loads(line) for line in (bundle / "probes.jsonl").read_text().splitlines()]
    return sorted((p for p in records if p["fault_id"] == row["fault_id"]
                   and row["inject_at"] <= p["t"] < end), key=lambda p: p["t"])


@pytest.mark.slow
def test_the_runbook_keeps_the_repairs_the_noop_run_does_not_make(tmp_path: Path) -> None:
    config = RunConfig(app="boutique", agent="runbook", seed=1, scenario="short-5",
                       out_dir=tmp_path / "runs")
    result = run_marathon(config, baseline_cache=tmp_path / "noop")
    assert result.noop_bundle is not None
    report, alone = result.score_report, score_bundle(result.bundle)
    probe_rule = {r["fault_id"]: r for r in alone["per_fault"] if r["repaired"]}
    kept = {r["fault_id"]: r for r in report["per_fault"] if r["repaired"]}
    assert kept, "the runbook repairs nothing here any more: this test proves nothing"
    assert set(kept) <= set(probe_rule)
    assert report["self_recovery"]["checked_against"] == "noop"
    for fault_id, row in probe_rule.items():
        repaired_at = row["inject_at"] + row["time_to_repair_s"]
        noop = probe_samples(result.noop_bundle, row)
        if all(p["healthy"] for p in noop):
            continue  # no symptom without action: the artifact decides (tests/test_scoring_rules.py)
        later = [p["healthy"] for p in noop if p["t"] >= repaired_at]
        # kept exactly when the noop run still fails at or after the agent's repair time
        assert (fault_id in kept) is (not all(later)), (fault_id, later)


def test_score_finds_the_runs_cached_baseline_and_says_when_there_is_none(tmp_path: Path) -> None:
    """`pytest-marathon score` without --noop checks self-recovery against the no-action bundle
    `run` cached, as the run itself did; with an empty cache it says the check was not made."""
    import subprocess
    import sys

    cache = tmp_path / "noop"
    cli = [sys.executable, "-m", "pytest_marathon"]
    ran = subprocess.run([*cli, "run", "--app", "boutique", "--agent", "runbook", "--seed", "1",
                          "--scenario", "short-5", "--out", str(tmp_path / "runs"), "--baseline-cache",
                          str(cache), "--json"], capture_output=True, text=True, timeout=600, check=True)
    summary = json.loads(ran.stdout)

    def score(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cli, "score", summary["bundle"], *extra], capture_output=True, text=True,
                              timeout=300, check=True)

    found = score("--baseline-cache", str(cache), "--json")
    assert f"no-action bundle: {summary['noop_bundle']}" in found.stderr
    report = json.loads(found.stdout)
    assert report["self_recovery"]["checked_against"] == "noop"
    assert report["marathon_score"] == summary["metrics"]["score"]
    missing = score("--baseline-cache", str(tmp_path / "empty"))
    assert "self-recovery" not in missing.stderr and "NOT CHECKED (no no-action bundle)" in missing.stdout
