"""What CI systems read from a marathon session, checked with the parsers those systems use.

One pytest session (through pytester, as a user runs it) with a passing and a failing run writes
the junit XML, the OpenMetrics file and the GitHub step summary; the junit file is validated
against the Jenkins xUnit plugin's JUnit schema (tests/fixtures/junit-10.xsd), the OpenMetrics
file with prometheus_client's OpenMetrics parser (and `promtool check metrics` where installed).
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from lxml import etree
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from pytest_marathon.ci.openmetrics import openmetrics_text
from pytest_marathon.results import MarathonResult

pytest_plugins = ["pytester"]

SCHEMA = Path(__file__).parent / "fixtures" / "junit-10.xsd"
SCENARIO = """\
name: two-faults
description: Two faults in ten minutes, for tests of the plugin's mechanics
warmup_s: 300
injection_window_s: 600
observation_s: 300
arrivals: 2
intensity: {start: 1.0, end: 1.0}
lifetime_s: {min: 240, max: 360}
max_concurrent: 2
"""


@pytest.fixture
def workdir(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenario file, and one noop-baseline cache shared by the module's sessions."""
    pytester.path.joinpath("two-faults.yaml").write_text(SCENARIO)
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    cache = root / "marathon-noop-cache"
    cache.mkdir(exist_ok=True)
    (pytester.path / ".marathon").mkdir()
    (pytester.path / ".marathon" / "noop").symlink_to(cache)
    return pytester.path


def test_junit_openmetrics_and_step_summary_are_what_ci_reads(
    pytester: pytest.Pytester, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = workdir / "step-summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest_subprocess(
        "--marathon-app=boutique", "--agent=runbook", "--agent=noop",
        "--marathon-scenario=two-faults.yaml", "--marathon-min-score=1", "-p", "no:cacheprovider",
        "--junitxml=out.xml", "--marathon-openmetrics=metrics.txt",
        "-W", "error",  # e.g. `record_property is incompatible with junit_family 'xunit2'`
    )
    result.assert_outcomes(passed=1, failed=1)  # noop scores 0 < 1

    # junit: valid for Jenkins' xUnit plugin, with a classname per app and agent
    schema = etree.XMLSchema(etree.parse(str(SCHEMA)))
    document = etree.parse(str(workdir / "out.xml"))
    assert schema.validate(document), schema.error_log
    cases = {case.get("name"): case for case in ET.parse(workdir / "out.xml").iter("testcase")}
    runbook = cases["marathon[boutique-runbook-seed1-two-faults]"]
    noop = cases["marathon[boutique-noop-seed1-two-faults]"]
    assert runbook.get("classname") == "marathon.boutique.runbook"
    assert noop.get("classname") == "marathon.boutique.noop"
    assert noop.find("failure") is not None
    assert runbook.find("properties") is None
    assert "score = " in runbook.findtext("system-out", "")
    suite = {p.get("name"): p.get("value")
             for p in ET.parse(workdir / "out.xml").find(".//testsuite/properties")}
    score = float(suite["boutique-runbook-seed1-two-faults.score"])
    assert 0 < score <= 100
    assert suite["boutique-noop-seed1-two-faults.invocations_ok"].isdigit()

    # OpenMetrics: parses strictly, one sample per run and metric, means per agent x app
    text = (workdir / "metrics.txt").read_text()
    families = {family.name: family for family in text_string_to_metric_families(text)}
    assert {"marathon_score", "marathon_mean_score", "marathon_mttd_seconds"} <= set(families)
    samples = {sample.labels["agent"]: sample.value for sample in families["marathon_score"].samples}
    assert samples == {"noop": pytest.approx(0.0, abs=1e-9), "runbook": pytest.approx(score)}
    assert all(family.type == "gauge" for family in families.values())
    if shutil.which("promtool"):  # installed by .ci/run (Debian's prometheus)
        checked = subprocess.run(["promtool", "check", "metrics"], input=text,
                                 capture_output=True, text=True, check=False)
        assert checked.returncode == 0, checked.stdout + checked.stderr

    # GitHub: the leaderboard appended as a Markdown table, earlier content kept
    markdown = summary.read_text()
    assert markdown.startswith("earlier step\n")
    assert "| Agent | App | Runs | Score |" in markdown
    assert "| runbook | boutique | 1 |" in markdown
    assert "2 run(s), 1 failed" in markdown


def test_the_legacy_family_also_gets_testcase_properties(
    pytester: pytest.Pytester, workdir: Path
) -> None:
    """Only `xunit1`'s schema has testcase properties; a user who chose it keeps them."""
    result = pytester.runpytest_subprocess(
        "--marathon-app=boutique", "--agent=runbook", "--marathon-scenario=two-faults.yaml",
        "-p", "no:cacheprovider", "--junitxml=legacy.xml", "-o", "junit_family=xunit1",
    )
    result.assert_outcomes(passed=1)
    (case,) = ET.parse(workdir / "legacy.xml").iter("testcase")
    assert case.get("classname") == "marathon.boutique.runbook"
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert float(properties["score"]) > 0
    assert properties["invocations_failed"] == "0"


def test_openmetrics_escapes_labels_and_leaves_out_metrics_not_reached() -> None:
    run = MarathonResult.from_json({
        "app": "boutique", "agent": 'cmd:"python agent.py" --say "hi\\there"',
        "scenario": "short-5", "seed": 3, "backend": "twin", "bundle": "b",
        "metrics": {"score": 12.5, "mttr_s": None, "risk": math.nan},
        "invocations": {"ok": 2, "crash": 1},
    })
    text = openmetrics_text([run])
    families = {family.name: family for family in text_string_to_metric_families(text)}
    (sample,) = families["marathon_score"].samples
    assert sample.labels["agent"] == run.agent
    assert sample.labels["seed"] == "3"
    assert "marathon_mttr_seconds" not in families
    assert "marathon_risk" not in families  # NaN is no value to compare
    assert families["marathon_invocations_failed"].samples[0].value == 1
