"""The command line as a daily tool: errors in one line with one prefix, `python -m`, seed
ranges, plug-ins from the current directory, and the options the pytest plugin shares with it."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_marathon.faults.scenario import builtin_scenarios, load_scenario

CLI = [sys.executable, "-m", "pytest_marathon"]
PREFIX = "pytest-marathon: error: "


def cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, check=False
    )


def one_line_error(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    """The single error line of a failed command; no traceback anywhere."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(lines) == 1, done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_python_dash_m_is_the_same_command_line() -> None:
    from pytest_marathon import RELEASE

    done = cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == RELEASE


def test_mcp_with_an_unknown_app_or_an_impossible_port_says_so_in_one_line() -> None:
    one_line_error(cli("mcp", "--app", "nope"), "--app", "nope", "boutique")
    one_line_error(cli("mcp", "--http", "99999"), "--http", "99999", "0-65535")
    one_line_error(cli("mcp", "--http", "eighty"), "--http", "eighty")


def test_mcp_on_a_port_in_use_says_which_port_in_one_line() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        line = one_line_error(cli("mcp", "--http", str(port)), f"127.0.0.1:{port}")
    assert line.startswith(PREFIX) and "in use" in line


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("schedule", "--app", "boutique", "--seed", "1", "--scenario", "nope"), "nope"),
        (("validate-catalog", "--app", "boutique", "--only", "no-such-entry"), "no-such-entry"),
        (("keygen", "--out", "/nonexistent-folder/key"), "/nonexistent-folder"),
        (("score", "/nonexistent-bundle"), "/nonexistent-bundle"),
        (("run", "--app", "boutique", "--agent", "noop", "--seed", "1-x"), "--seed"),
        (("run", "--app", "boutique", "--agent", "nope", "--seed", "1"), "nope"),
    ],
    ids=["schedule", "validate-catalog", "keygen", "score", "run-seed", "run-agent"],
)
def test_every_command_reports_errors_with_one_prefix(args: tuple[str, ...], needle: str) -> None:
    line = one_line_error(cli(*args), needle)
    assert line.startswith(PREFIX), line


AGENTS = textwrap.dedent(
    """
    class Broken:
        name = "broken"
        description = "raises while being created"

        def __init__(self):
            raise RuntimeError("no model configured")

        def invoke(self, ctx):
            return None


    class Quiet:
        name = "quiet"
        description = "does nothing, from the current directory"

        def invoke(self, ctx):
            return None
    """
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's folder holding a plug-in module that is not installed and not on PYTHONPATH."""
    (tmp_path / "localagents.py").write_text(AGENTS, encoding="utf-8")
    return tmp_path


def test_an_agent_constructor_that_raises_is_one_line_naming_the_agent(project: Path) -> None:
    done = cli("run", "--app", "boutique", "--agent", "localagents:Broken", "--seed", "1",
               "--scenario", "short-5", cwd=project)
    one_line_error(done, "localagents:Broken", "RuntimeError", "no model configured")
    assert not (project / "marathon-bundles").exists()  # nothing ran, nothing was written


def test_an_unwritable_bundle_folder_is_one_line(project: Path) -> None:
    (project / "taken").write_text("a file, not a folder", encoding="utf-8")
    done = cli("run", "--app", "boutique", "--agent", "noop", "--seed", "1", "--scenario",
               "short-5", "--out", str(project / "taken"), "--baseline-cache",
               str(project / "cache"), cwd=project)
    one_line_error(done, str(project / "taken"), "not a folder")


def test_a_plug_in_in_the_current_directory_runs_without_pythonpath_for_each_seed_of_a_range(
    project: Path,
) -> None:
    done = cli("run", "--app", "boutique", "--agent", "localagents:Quiet", "--seed", "1-2",
               "--scenario", "short-5", "--json", "--baseline-cache", str(project / "cache"),
               cwd=project)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert [r["seed"] for r in results] == [1, 2]
    for result in results:
        manifest = json.loads((project / result["bundle"] / "manifest.json").read_text())
        assert manifest["agent"] == "localagents:Quiet" and manifest["status"] == "complete"


def test_scenarios_lists_every_shipped_scenario_with_its_shape() -> None:
    done = cli("scenarios")
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    assert sorted(rows) == builtin_scenarios()
    for name, row in rows.items():
        scenario = load_scenario(name)
        assert f"{scenario.duration_s / 60:g} min" in row and scenario.description in row


def test_every_cli_argument_has_help_text() -> None:
    from pytest_marathon.cli import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    missing = [
        f"{name} {'/'.join(action.option_strings) or action.dest}"
        for name, sub in commands.items()
        for action in sub._actions
        if not action.help and action.dest != "help"
    ]
    assert not missing, missing


def test_the_plugin_takes_the_cli_delta_and_budget(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "--marathon-app=boutique", "--agent=noop", "--marathon-scenario=short-5",
        "--marathon-delta=60", "--marathon-budget=30", "-p", "no:cacheprovider",
    )
    result.assert_outcomes(passed=1)
    manifest = next(pytester.path.rglob("boutique-noop-seed1-short-5/manifest.json"))
    config = json.loads(manifest.read_text())["config"]
    assert (config["delta_s"], config["budget_s"]) == (60.0, 30.0)


@pytest.mark.parametrize(
    ("option", "needle"),
    [("--marathon-delta=7", "multiple of 5"), ("--marathon-budget=0", "positive"),
     ("--marathon-delta=soon", "not a number")],
)
def test_the_plugin_refuses_a_bad_delta_or_budget_before_running(
    pytester: pytest.Pytester, option: str, needle: str
) -> None:
    result = pytester.runpytest("--marathon-app=boutique", "--agent=noop", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{option.split('=')[0]}*{needle}*"])


def test_the_shipped_docs_are_listed_and_printed_as_the_cli_names_them() -> None:
    from pytest_marathon.interface.tools import TOOLS

    listed = cli("docs")
    assert listed.returncode == 0, listed.stderr
    names = {line.split()[0] for line in listed.stdout.splitlines()}
    assert {"agents", "score-json", "internals"} <= names
    agents = cli("docs", "agents")
    assert agents.returncode == 0 and agents.stdout.startswith("# Writing an agent")
    for tool in TOOLS:  # the guide names every tool an agent gets
        assert f"`{tool.name}`" in agents.stdout, tool.name
    # argparse wraps help text, also after a hyphen: join the lines back before looking
    pointers = re.sub(r"-\s+", "-", " ".join((cli("score", "--help").stdout
                                             + cli("agents").stdout).split()))
    for page in ("score-json", "agents"):
        assert f"pytest-marathon docs {page}" in pointers
    one_line_error(cli("docs", "nope"), "nope", "agents")


def test_a_cluster_the_cli_cannot_use_stops_with_the_reason_and_no_traceback() -> None:
    done = cli("run", "--app", "boutique", "--agent", "noop", "--seed", "1", "--backend", "kubernetes",
               "--kubeconfig", "/nonexistent-kubeconfig", "--prometheus-url", "http://127.0.0.1:9")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{PREFIX}cannot use /nonexistent-kubeconfig: " in done.stderr


def test_a_cluster_the_plugin_cannot_use_fails_its_item_in_one_line(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--marathon-app", "boutique", "--agent", "noop", "--marathon-backend=kubernetes",
                                "--marathon-kubeconfig", "/nonexistent-kubeconfig",
                                "--marathon-prometheus-url", "http://127.0.0.1:9", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["backend: cannot use /nonexistent-kubeconfig*"])
    assert "Traceback" not in result.stdout.str() and "raise BackendError" not in result.stdout.str()
