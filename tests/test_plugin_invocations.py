"""Invocation outcomes made visible: counts in results, junit, leaderboard and summaries, the
verdict on runs whose invocations failed, and `cmd:` programs checked before anything runs.

The agents are in-process classes of a module the test writes (`module:Class` specs) that raise
at some invocations; the runner records a raise as a `crash`, which is what a broken agent does.
"""

from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_marathon.cli import main
from pytest_marathon.results import (
    MarathonResult,
    format_leaderboard,
    invocation_failure,
    leaderboard,
    parse_failure_fraction,
)

pytest_plugins = ["pytester"]

AGENTS = '''\
class AlwaysRaises:
    name = "always-raises"
    description = "an agent that is down"

    def invoke(self, ctx):
        raise RuntimeError("agent down: " + "x" * 400)


class FailsOnce:
    name = "fails-once"
    description = "an agent whose second invocation crashes"

    def __init__(self):
        self.calls = 0

    def invoke(self, ctx):
        self.calls += 1
        if self.calls == 2:
            raise RuntimeError("hiccup")
'''
GRID = ["--marathon-app=boutique", "--marathon-scenario=short-5", "-p", "no:cacheprovider"]
DOWN_ID = "marathon[boutique-AlwaysRaises-seed1-short-5]"


@pytest.fixture
def agents_module(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """`flaky_agents` importable by the pytest subprocess (and by the CLI in this process), and
    one noop baseline cache shared by the module's runs (and xdist workers, under its lock)."""
    pytester.path.joinpath("flaky_agents.py").write_text(AGENTS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(pytester.path), os.environ.get("PYTHONPATH")])))
    monkeypatch.syspath_prepend(str(pytester.path))
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    cache = root / "marathon-noop-cache"
    cache.mkdir(exist_ok=True)
    (pytester.path / ".marathon").mkdir()
    (pytester.path / ".marathon" / "noop").symlink_to(cache)
    return cache


def _failure_lines(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "did not end ok" in line]


def test_a_run_whose_every_invocation_failed_fails_with_the_cause_in_one_line(
    pytester: pytest.Pytester, agents_module: Path
) -> None:
    result = pytester.runpytest_subprocess(
        *GRID, "--agent=flaky_agents:AlwaysRaises", "--junitxml=out.xml", "-rf"
    )
    result.assert_outcomes(failed=1)
    # the failure section is the message alone, on one line (the short summary clips it)
    (summary,) = [line for line in _failure_lines(result) if not line.startswith("FAILED")]
    assert "17 of 17 invocations did not end ok" in summary
    assert "--marathon-max-failed-invocations" in summary
    assert (
        "first: invocation 1 crash: agent 'flaky_agents:AlwaysRaises' raised RuntimeError at "
        "flaky_agents.py:" in summary
    )
    assert ": agent down: xxx" in summary
    assert "x" * 300 not in summary  # the detail is clipped
    result.stdout.fnmatch_lines(["*marathon leaderboard*", "Agent*Score*Inv ok*",
                                 "flaky_agents:AlwaysRaises*0/17"])
    tree = ET.parse(pytester.path / "out.xml")
    assert tree.find(f".//testcase[@name='{DOWN_ID}']") is not None
    # xunit2 testcases take no properties: the counts are suite properties named by the run
    run_id = DOWN_ID.removeprefix("marathon[").removesuffix("]")
    properties = {p.get("name"): p.get("value") for p in tree.find(".//testsuite/properties")}
    assert properties[f"{run_id}.invocations_ok"] == "0"
    assert properties[f"{run_id}.invocations_failed"] == "17"


def test_one_failed_invocation_passes_by_default_and_fails_with_no_tolerance(
    pytester: pytest.Pytester, agents_module: Path
) -> None:
    args = [*GRID, "--agent=flaky_agents:FailsOnce", "--marathon-json=results.json"]
    tolerated = pytester.runpytest_subprocess(*args)
    tolerated.assert_outcomes(passed=1)
    tolerated.stdout.fnmatch_lines(["flaky_agents:FailsOnce*16/17"])
    import json

    (run,) = json.loads((pytester.path / "results.json").read_text())["runs"]
    assert run["invocations"] == {"crash": 1, "ok": 16}
    hiccup = "agent 'flaky_agents:FailsOnce' raised RuntimeError at flaky_agents.py:19: hiccup"
    assert run["first_failed_invocation"] == {"n": 2, "status": "crash", "detail": hiccup}

    strict = pytester.runpytest_subprocess(*args, "--marathon-max-failed-invocations=0", "-rf")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(
        ["1 of 17 invocations did not end ok (6%, above the 0% allowed by "
         f"--marathon-max-failed-invocations); first: invocation 2 crash: {hiccup}"]
    )


def test_the_marathon_fixture_exposes_counts_without_failing(
    pytester: pytest.Pytester, agents_module: Path
) -> None:
    pytester.makepyfile(test_mine='''
from flaky_agents import AlwaysRaises

def test_down(marathon):
    result = marathon.run(AlwaysRaises(), scenario="short-5")
    assert result.invocations == {"crash": 17}
    assert (result.invocations_ok, result.invocations_failed) == (0, 17)
''')
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.parametrize("value", ["abc", "125%", "1.5", "-0.1", "nan", "%"])
def test_bad_thresholds_are_usage_errors(pytester: pytest.Pytester, value: str) -> None:
    result = pytester.runpytest_subprocess(
        "--marathon-app=boutique", "--agent=noop", f"--marathon-max-failed-invocations={value}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--marathon-max-failed-invocations" in result.stderr.str()
    assert "25%" in result.stderr.str()


@pytest.mark.parametrize(
    "spec", ['cmd:"no-such-program-here" --flag', "cmd:./missing-agent.sh", "cmd:./not-executable"]
)
def test_a_cmd_agent_whose_program_is_missing_stops_pytest_before_anything_runs(
    pytester: pytest.Pytester, spec: str
) -> None:
    pytester.path.joinpath("not-executable").write_text("#!/bin/sh\n")
    result = pytester.runpytest_subprocess("--marathon-app=boutique", f"--agent={spec}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--agent: cmd agent: program" in result.stderr.str()
    assert not (pytester.path / ".marathon" / "bundles").exists()


def test_the_cli_refuses_a_missing_cmd_program_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--app", "boutique", "--agent", "cmd:no-such-program-here", "--seed", "1",
                 "--scenario", "short-5", "--out", str(tmp_path / "b"),
                 "--baseline-cache", str(tmp_path / "cache")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["pytest-marathon: error: cmd agent: program 'no-such-program-here' is not "
                   "found on PATH"]
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("value", ["abc", "125%", "2"])
def test_the_cli_refuses_a_bad_threshold_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    code = main(["run", "--app", "boutique", "--agent", "noop", "--seed", "1", "--out",
                 str(tmp_path / "b"), "--max-failed-invocations", value])
    assert code == 2
    assert "--max-failed-invocations" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


def test_the_cli_exits_nonzero_with_the_same_line_and_shows_counts(
    pytester: pytest.Pytester, agents_module: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", "--app", "boutique", "--seed", "1", "--scenario", "short-5", "--out",
            str(pytester.path / "b"), "--baseline-cache", str(agents_module), "--alerts", "0"]
    assert main([*args, "--agent", "flaky_agents:AlwaysRaises"]) == 1
    out, err = capsys.readouterr()
    assert "invocations ok: 0/17, crash 17" in out
    assert out.splitlines()[5].endswith("0/17")  # the leaderboard row
    assert ("17 of 17 invocations did not end ok (100%, above the 25% allowed by "
            "--max-failed-invocations); first: invocation 1 crash: agent "
            "'flaky_agents:AlwaysRaises' raised RuntimeError at flaky_agents.py:6: agent down") in err
    assert main([*args, "--agent", "flaky_agents:FailsOnce"]) == 0
    assert main([*args, "--agent", "flaky_agents:FailsOnce", "--max-failed-invocations",
                 "0.05"]) == 1


# the rule itself, on results built directly -------------------------------------------------


def _result(invocations: dict[str, int], first: dict | None = None) -> MarathonResult:
    return MarathonResult(app="boutique", agent="a", scenario="short-5", seed=1, backend="twin",
                          bundle=Path("/b/x"), metrics={"score": 1.0}, invocations=invocations,
                          first_failed_invocation=first)


@pytest.mark.parametrize(
    ("raw", "fraction"), [("25%", 0.25), ("0.25", 0.25), ("0", 0.0), ("100%", 1.0), (" 1 ", 1.0)]
)
def test_thresholds_read_as_percentages_or_fractions(raw: str, fraction: float) -> None:
    assert parse_failure_fraction(raw) == pytest.approx(fraction)


@pytest.mark.parametrize(
    ("counts", "limit", "fails"),
    [
        ({"ok": 3, "crash": 1}, 0.25, False),  # exactly at the bound passes
        ({"ok": 2, "timeout": 1, "error": 1}, 0.25, True),
        ({"ok": 5}, 0.0, False),
        ({}, 0.0, False),  # nothing invoked: nothing to judge
        ({"ok": 99, "crash": 1}, 0.0, True),
    ],
)
def test_the_verdict_counts_every_status_but_ok(
    counts: dict[str, int], limit: float, fails: bool
) -> None:
    first = {"n": 3, "status": "timeout", "detail": "exceeded\nthe budget"}
    line = invocation_failure(_result(counts, first), limit, "--opt")
    assert (line is not None) == fails
    if line:
        assert "\n" not in line
        assert line.endswith("first: invocation 3 timeout: exceeded the budget")


def test_the_leaderboard_sums_invocations_over_runs() -> None:
    rows = leaderboard([_result({"ok": 15, "crash": 2}), _result({"ok": 28})])
    assert (rows[0].invocations_ok, rows[0].invocations_total) == (43, 45)
    header, _, row = format_leaderboard(rows).splitlines()
    assert header.endswith("Inv ok")
    assert row.endswith("43/45")
    assert MarathonResult.from_json(_result({"ok": 1}, None).to_json()).invocations == {"ok": 1}


def test_sys_executable_still_runs_as_a_cmd_program() -> None:
    from pytest_marathon.agents import resolve_agent

    assert resolve_agent(f'cmd:"{sys.executable}" -c pass').command[0] == sys.executable
