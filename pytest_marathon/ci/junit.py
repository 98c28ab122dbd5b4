"""Marathon results in the junit XML pytest writes, within the schema CI parsers validate.

Under pytest's default family (`xunit2`) a `testcase` may not hold `properties` (Jenkins'
xunit plugin rejects the file), so each run's metrics go where that schema allows them: one
`testsuite` property per run and metric (`<run id>.<metric>`), and a `system-out` block on the
run's `testcase` that Jenkins and GitLab show beside the test. Only under the legacy `xunit1`
family, whose schema has them, are the metrics also `testcase` properties. The `classname` is
`marathon.<app>.<agent>`, so CI test browsers group runs by app and agent instead of showing
one nameless class.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from pytest_marathon.config import agent_slug
from pytest_marathon.results import MarathonResult


def junit_writer(config: pytest.Config) -> Any:
    """pytest's junit writer when `--junitxml` is given, else None. It is the object behind the
    `record_testsuite_property` fixture; hooks have no fixture request to reach it by."""
    from _pytest.junitxml import xml_key

    return config.stash.get(xml_key, None)


def legacy_family(config: pytest.Config) -> bool:
    """True when the user chose the `xunit1` (`legacy`) family, whose testcases take properties."""
    return str(config.getini("junit_family")) in ("xunit1", "legacy")


def classname_for(run: Mapping[str, Any]) -> str:
    """`marathon.<app>.<agent>`: dots inside a part would read as further package levels."""
    parts = (run["app"], agent_slug(str(run["agent"])))
    return ".".join(["marathon", *(re.sub(r"[^A-Za-z0-9_-]+", "_", p) for p in parts)])


def metric_pairs(result: MarathonResult) -> Iterator[tuple[str, str]]:
    """(name, value) for every metric, the invocation counts and the bundle; "" for a metric the
    run did not reach."""
    for name in sorted(result.metrics):
        value = result.metrics[name]
        yield name, "" if value is None else str(value)
    yield "invocations_ok", str(result.invocations_ok)
    yield "invocations_failed", str(result.invocations_failed)
    yield "bundle", str(result.bundle)


def annotate_testcase(config: pytest.Config, report: pytest.TestReport, run: Mapping[str, Any]) -> None:
    """Set the testcase's classname (on its first report, before pytest writes the attributes)."""
    xml = junit_writer(config)
    if xml is not None and report.when == "setup":
        xml.node_reporter(report).add_attribute("classname", classname_for(run))


def record_result(config: pytest.Config, report: pytest.TestReport, result: MarathonResult) -> None:
    """Add a finished run's metrics to the suite properties and its testcase's `system-out`."""
    xml = junit_writer(config)
    if xml is None:
        return
    pairs = list(metric_pairs(result))
    for name, value in pairs:
        xml.add_global_property(f"{result.run_id}.{name}", value)
    out = ET.Element("system-out")
    out.text = "marathon metrics\n" + "".join(f"{name} = {value}\n" for name, value in pairs)
    xml.node_reporter(report).append(out)
