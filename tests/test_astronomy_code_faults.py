"""The Astronomy Shop's code faults build the way the release pipeline builds them.

Each fault in `fault_catalog/astronomy/code-faults/<service>.yaml` is applied to the service's
current sources: every edit's `before` occurs exactly once (when it is applied), and the edited
service must lint clean and pass its own unit tests through the sandbox, with the test updates the
fault's author made. The unedited services must do the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_marathon.twin.sandbox import lint, run_unit_tests

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "pytest_marathon" / "twin" / "apps" / "astronomy"
SERVICES = APP / "services"
FAULTS = ROOT / "fault_catalog" / "astronomy" / "code-faults"
TASKS = {"index", "browse_product", "get_recommendations", "get_ads", "view_cart", "add_to_cart",
         "checkout", "checkout_multi"}
FIELDS = {"id", "service", "edits", "change_cause", "update", "defect", "exposed_by", "log", "probe"}
DEPLOYMENTS = set(yaml.safe_load((APP / "app.yaml").read_text())["deployments"])
WITH_CODE = sorted(p.name for p in SERVICES.iterdir() if (p / "service.py").is_file())


def sources(service: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((SERVICES / service).iterdir()) if p.is_file()}


def faults() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for path in sorted(FAULTS.glob("*.yaml")):
        found.extend(yaml.safe_load(path.read_text()))
    return found


ALL = faults()


def apply(fault: dict[str, Any]) -> dict[str, str]:
    files = sources(fault["service"])
    for edit in fault["edits"]:
        text = files[edit["file"]]
        count = text.count(edit["before"])
        assert count == 1, f"{fault['id']}: `before` occurs {count} times in {edit['file']}"
        files[edit["file"]] = text.replace(edit["before"], edit["after"])
    return files


@pytest.mark.parametrize("service", WITH_CODE)
def test_service_builds(service: str) -> None:
    files = sources(service)
    assert lint(service, files) == []
    report = run_unit_tests(service, files)
    assert report.failed == 0 and report.passed > 0, report.failures


def test_catalog_shape() -> None:
    ids = [fault["id"] for fault in ALL]
    assert len(ids) == len(set(ids)) and len(ids) >= 40
    assert len({fault["service"] for fault in ALL}) >= 10
    for fault in ALL:
        assert set(fault) == FIELDS, fault["id"]
        assert fault["service"] in WITH_CODE, fault["id"]
        assert fault["id"].startswith(f"code-{fault['service']}-")
        assert fault["change_cause"].startswith(f"{fault['service']}: ")
        assert fault["exposed_by"] and set(fault["exposed_by"]) <= TASKS
        assert fault["log"]["service"] in DEPLOYMENTS and fault["log"]["message"]
        probe = fault["probe"]
        if probe["kind"] == "request":
            assert probe["task"] in TASKS
        else:
            assert probe["kind"] == "rpc" and probe["service"] in DEPLOYMENTS
            assert probe["method"] and isinstance(probe["request"], dict)


@pytest.mark.parametrize("fault", ALL, ids=[fault["id"] for fault in ALL])
def test_fault_builds(fault: dict[str, Any]) -> None:
    files = apply(fault)
    assert files != sources(fault["service"])
    assert lint(fault["service"], files) == []
    report = run_unit_tests(fault["service"], files)
    assert report.failed == 0, report.failures
