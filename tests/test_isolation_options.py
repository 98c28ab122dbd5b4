"""`--marathon-require-isolation` and `run --require-isolation` refuse, in one line and before
anything runs, an agent that would run below the sandbox; built-in baselines are accepted."""

from __future__ import annotations

import sys

import pytest
from intruders.agents import Intruder
from isolation_support import need_sandbox, no_sandbox  # noqa: F401 - no_sandbox is a fixture
from pytest_marathon.agents import resolve_agent

from pytest_marathon.cli import main
from pytest_marathon.isolation.levels import IsolationRequired, require_isolation

pytest_plugins = ["pytester"]
CMD = f'cmd:"{sys.executable}" -c pass'


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_cli_refuses_a_run_below_the_sandbox_in_one_line(
    no_sandbox: None, tmp_path, capsys: pytest.CaptureFixture[str]  # noqa: F811 - the fixture
) -> None:
    code = main(["run", "--app", "boutique", "--agent", CMD, "--seed", "1",
                 "--out", str(tmp_path / "out"), "--require-isolation"])
    assert code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("pytest-marathon: error: --require-isolation: agent 'cmd:")
    assert "isolation 'process', not 'sandbox': bubblewrap is not usable here" in line
    assert not (tmp_path / "out").exists()  # nothing ran


def test_pytest_refuses_the_grid_before_collection(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARATHON_SANDBOX", "off")
    result = pytester.runpytest_subprocess(
        "--marathon-app=boutique", f"--agent={CMD}", "--marathon-require-isolation",
        "-p", "no:cacheprovider", "-W", "ignore::UserWarning",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if "--marathon-require-isolation" in line]
    assert len(errors) == 1
    assert "would run at isolation 'process', not 'sandbox'" in errors[0]


def test_built_ins_and_sandboxed_agents_pass_in_process_plug_ins_do_not() -> None:
    need_sandbox()
    require_isolation(resolve_agent("runbook"), "--require-isolation")
    require_isolation(resolve_agent(CMD), "--require-isolation")
    require_isolation(resolve_agent("intruders.agents:Honest"), "--require-isolation")
    with pytest.raises(IsolationRequired, match="'intruder' would run at isolation "
                       "'in-process'.*inside the runner"):
        require_isolation(Intruder(), "--require-isolation")
