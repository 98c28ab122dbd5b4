"""Option validation and collection of the marathon grid, through pytest itself (pytester)."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

import pytest_marathon
from pytest_marathon.faults.admission_record import RECORD_NAME

pytest_plugins = ["pytester"]


def _usage_error(pytester: pytest.Pytester, *args: str) -> str:
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    return result.stderr.str()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--marathon-app=nope", "--agent=noop"], ["'nope'", "boutique"]),
        (["--marathon-app=hotelreservation", "--agent=noop"],
         ["'hotelreservation' has no fault catalog", "--marathon-mode=episodic", "astronomy, boutique"]),
        (["--marathon-app=socialnetwork", "--agent=noop"],
         ["'socialnetwork' has no fault catalog", "--marathon-mode=episodic", "astronomy, boutique"]),
        (["--marathon-app=boutique", "--agent=nobody"], ["'nobody'", "runbook", "noop"]),
        (["--marathon-app=boutique", "--agent=noop", "--marathon-seed=3-1"], ["3-1"]),
        (["--marathon-app=boutique", "--agent=noop", "--marathon-seed=x"], ["'x'"]),
        (["--marathon-app=boutique", "--agent=noop", "--marathon-scenario=long"],
         ["'long'", "short-5", "marathon"]),
        (["--marathon-app=boutique", "--agent=noop", "--marathon-backend=k8s"], ["'k8s'", "twin"]),
        (["--marathon-app=boutique", "--agent=noop", "--marathon-min-score=high"], ["'high'"]),
        (["--marathon-app=boutique", "--agent=noop", "--marathon-compare-fail=speed:5"],
         ["'speed'", "score", "risk"]),
        (["--marathon-app=boutique", "--agent=noop", "--marathon-compare-fail=score"],
         ["'score'", "score:10%"]),
        (["--agent=noop"], ["--marathon-app", "boutique"]),
        (["--marathon-app=boutique", "--agent=noop", "--marathon-save=bad name"],
         ["--marathon-save", "'bad name'", "letters, digits"]),
    ],
)
def test_bad_values_are_usage_errors_naming_value_and_choices(
    pytester: pytest.Pytester, args: list[str], expected: list[str]
) -> None:
    message = _usage_error(pytester, *args)
    for fragment in expected:
        assert fragment in message


def test_a_bad_save_name_stops_pytest_before_any_run_in_one_line(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest_subprocess(
        "--marathon-app=boutique", "--agent=noop", "--marathon-scenario=short-5",
        "--marathon-save=bad/name",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert errors == [
        "ERROR: --marathon-save: bad save name 'bad/name': use letters, digits, '.', '_' or '-'"
    ]
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not (pytester.path / ".marathon").exists()  # no run started, no baseline built


def _package_without_admission_record(root: Path, app: str) -> Path:
    """The installed package seen through symlinks, except that `app`'s catalog has no admission
    record: every shipped catalog is admitted, so this is how the refusal meets a real catalog."""
    shadow = root / "shadow"
    package = Path(pytest_marathon.__file__).parent
    catalogs = Path(str(resources.files("pytest_marathon.fault_catalog")))
    (shadow / "pytest_marathon" / "fault_catalog" / app).mkdir(parents=True)
    for child in package.iterdir():
        if child.name not in {"fault_catalog", "__pycache__"}:
            (shadow / "pytest_marathon" / child.name).symlink_to(child)
    for name in ("agents", "scenarios", "docs"):
        source = Path(str(resources.files(f"pytest_marathon.{name}")))
        if not (shadow / "pytest_marathon" / name).exists():
            (shadow / "pytest_marathon" / name).symlink_to(source)
    for child in catalogs.iterdir():
        if child.name != app:
            (shadow / "pytest_marathon" / "fault_catalog" / child.name).symlink_to(child)
    for child in (catalogs / app).iterdir():
        if child.name != RECORD_NAME:
            (shadow / "pytest_marathon" / "fault_catalog" / app / child.name).symlink_to(child)
    return shadow


def test_a_catalog_without_an_admission_record_runs_no_marathon(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
) -> None:
    shadow = _package_without_admission_record(pytester.path, "trainticket")
    monkeypatch.setenv("PYTHONPATH", str(shadow))
    message = _usage_error(pytester, "--marathon-app=trainticket", "--agent=noop")
    assert "'trainticket' has a fault catalog that has not been admitted yet" in message
    assert "validate-catalog --app trainticket --write-scope" in message
    assert "marathon apps: astronomy, boutique" in message
    cli = subprocess.run(
        [sys.executable, "-m", "pytest_marathon", "run", "--app", "trainticket", "--agent", "noop",
         "--seed", "1"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(shadow)},
        cwd=pytester.path, timeout=120,
    )
    assert cli.returncode != 0
    assert "has not been admitted yet" in cli.stderr
    assert not (pytester.path / ".marathon").exists()


def test_every_shipped_catalog_runs_marathons(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--collect-only", "-q", "--marathon-app=trainticket", "--marathon-app=astronomy",
        "--agent=noop",
    )
    assert result.ret == 0
    assert "marathon[trainticket-noop-seed1]" in result.outlines


def test_compare_without_any_save_is_a_usage_error(pytester: pytest.Pytester) -> None:
    message = _usage_error(
        pytester, "--marathon-app=boutique", "--agent=noop", "--marathon-compare"
    )
    assert "no saved marathon runs" in message


def test_grid_ids_marker_and_user_tests_side_by_side(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine="def test_mine():\n    pass\n")
    result = pytester.runpytest_subprocess(
        "--collect-only", "-q", "--marathon-app=boutique", "--agent=noop", "--agent=runbook",
        "--marathon-seed=1-2", "--marathon-seed=5", "--marathon-scenario=short-5",
    )
    assert result.ret == 0
    ids = [line for line in result.outlines if line.startswith(("marathon[", "test_mine"))]
    assert ids == [
        "test_mine.py::test_mine",
        *(f"marathon[boutique-{agent}-seed{seed}-short-5]"
          for agent in ("noop", "runbook") for seed in (1, 2, 5)),
    ]


def test_keyword_and_marker_select_marathons(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine="def test_mine():\n    pass\n")
    grid = ["--collect-only", "-q", "--marathon-app=boutique", "--agent=noop",
            "--agent=runbook", "--marathon-seed=1-3"]
    by_keyword = pytester.runpytest_subprocess(*grid, "-k", "runbook and seed2")
    assert [line for line in by_keyword.outlines if "[" in line] == [
        "marathon[boutique-runbook-seed2]"
    ]
    by_marker = pytester.runpytest_subprocess(*grid, "-m", "not marathon")
    assert "test_mine.py::test_mine" in by_marker.outlines
    assert not [line for line in by_marker.outlines if line.startswith("marathon[")]


def test_ini_options_configure_the_grid(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nmarathon_app = boutique\nmarathon_agent = noop\nmarathon_seed = 4\n"
        "marathon_scenario = short-5\n"
    )
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    assert "marathon[boutique-noop-seed4-short-5]" in result.outlines
    overridden = pytester.runpytest_subprocess("--collect-only", "-q", "--marathon-seed=7")
    assert "marathon[boutique-noop-seed7-short-5]" in overridden.outlines


def test_without_marathon_options_nothing_is_added(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine="def test_mine():\n    pass\n")
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(passed=1)
    assert "leaderboard" not in result.stdout.str()


def test_help_lists_the_marathon_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    text = result.stdout.str()
    for option in ("--marathon-app", "--agent", "--marathon-compare-fail", "marathon_seed"):
        assert option in text


def test_a_scenario_file_is_validated_and_named_by_its_stem(pytester: pytest.Pytester) -> None:
    shipped = pytester.path.joinpath("scenarios")
    shipped.mkdir()
    shipped.joinpath("broken.yaml").write_text("name: broken\nwarmup_s: 300\n")
    message = _usage_error(pytester, "--marathon-app=boutique", "--agent=noop",
                           "--marathon-scenario=scenarios/broken.yaml")
    assert "broken.yaml" in message and "'arrivals'" in message
    shipped.joinpath("two faults.yaml").write_text(
        "name: two\ndescription: two faults\nwarmup_s: 300\ninjection_window_s: 600\n"
        "observation_s: 300\narrivals: 2\nintensity: {start: 1.0, end: 1.0}\n"
        "lifetime_s: {min: 240, max: 360}\nmax_concurrent: 2\n"
    )
    result = pytester.runpytest_subprocess("--collect-only", "-q", "--marathon-app=boutique",
                                           "--agent=noop", "--marathon-scenario=scenarios/two faults.yaml")
    assert "marathon[boutique-noop-seed1-two-faults]" in result.outlines
