"""The astronomy code faults of batch A (frontend, checkout, payment, currency, email, quote,
shipping) build the way the release pipeline builds them.

Each fault in `fault_catalog/astronomy/code-faults/<service>.yaml` is applied to the service's
current sources: every edit's `before` occurs exactly once (at the time it is applied), and the
edited service must lint clean and pass its own unit tests through the sandbox. The unedited
services must do the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_marathon.twin.sandbox import lint, run_unit_tests

ROOT = Path(__file__).resolve().parents[1]
SERVICES = ROOT / "pytest_marathon" / "twin" / "apps" / "astronomy" / "services"
CATALOG = ROOT / "fault_catalog" / "astronomy" / "code-faults"
BATCH = ("frontend-proxy", "frontend", "image-provider", "checkout", "payment", "currency", "email",
         "quote", "shipping")
FAULT_SERVICES = ("frontend", "checkout", "payment", "currency", "email", "quote", "shipping")
LOAD_TASKS = {"index", "browse_product", "get_recommendations", "get_ads", "view_cart", "add_to_cart",
              "checkout", "checkout_multi"}
FIELDS = {"id", "service", "edits", "change_cause", "update", "defect", "exposed_by", "log", "probe"}


def sources(service: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((SERVICES / service).iterdir()) if p.is_file()}


def faults() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for service in FAULT_SERVICES:
        out.extend(yaml.safe_load((CATALOG / f"{service}.yaml").read_text()))
    return out


def apply(fault: dict[str, Any]) -> dict[str, str]:
    files = sources(fault["service"])
    for edit in fault["edits"]:
        text = files[edit["file"]]
        count = text.count(edit["before"])
        assert count == 1, f"{fault['id']}: `before` occurs {count} times in {edit['file']}"
        files[edit["file"]] = text.replace(edit["before"], edit["after"])
    return files


@pytest.mark.parametrize("service", BATCH)
def test_service_builds(service: str) -> None:
    files = sources(service)
    assert lint(service, files) == []
    report = run_unit_tests(service, files)
    assert report.failed == 0, report.failures
    assert report.passed > 0


def test_catalog_shape() -> None:
    entries = faults()
    ids = [fault["id"] for fault in entries]
    assert len(ids) == len(set(ids)) and len(ids) >= 22
    for fault in entries:
        assert set(fault) == FIELDS, fault["id"]
        assert fault["id"].startswith(f"code-{fault['service']}-")
        assert fault["change_cause"].startswith(f"{fault['service']}: ")
        assert set(fault["exposed_by"]) <= LOAD_TASKS and fault["exposed_by"]
        assert fault["log"]["service"] in BATCH + ("cart", "product-catalog", "ad", "recommendation")
        assert fault["log"]["message"]
        assert fault["probe"]["kind"] in ("request", "rpc")
    for service in FAULT_SERVICES:
        assert sum(1 for fault in entries if fault["service"] == service) >= 3, service


@pytest.mark.parametrize("fault", faults(), ids=lambda fault: fault["id"])
def test_fault_builds(fault: dict[str, Any]) -> None:
    files = apply(fault)
    assert files != sources(fault["service"])
    assert lint(fault["service"], files) == []
    report = run_unit_tests(fault["service"], files)
    assert report.failed == 0, report.failures
