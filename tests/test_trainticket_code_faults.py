"""Train Ticket's code faults build the way the release pipeline builds them and fail under load.

Each fault in `fault_catalog/trainticket/code-faults/<service>.yaml` is applied to the files of the
service's image (the app.yaml `shared_code` modules, then the service's own folder): every edit's
`before` occurs exactly once, and the edited service must lint clean and pass its own unit tests.
Rolled out on the twin through `release(patch=...)` (the path a catalog entry takes), a sample of
the faults must fail the load's requests through the entry and write the stated log line; the
whole catalog is checked the same way under `-m slow`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_marathon.twin.engine import Twin
from pytest_marathon.twin.sandbox import lint, run_unit_tests

ROOT = Path(__file__).resolve().parents[1]
APP_DIR = ROOT / "pytest_marathon" / "twin" / "apps" / "trainticket"
FAULTS = ROOT / "fault_catalog" / "trainticket" / "code-faults"
APP = yaml.safe_load((APP_DIR / "app.yaml").read_text())
TASKS = set(APP["load"]["tasks"])
DEPLOYMENTS = set(APP["deployments"])
FIELDS = {"id", "service", "edits", "change_cause", "update", "defect", "exposed_by", "log", "probe"}
# services no load task reaches (admin pages, news, avatar, ticket office) or too rarely to fail
# four requests a minute (consignment, food orders, preserve-other, cancel, execute)
OFF_PATH = {"ts-admin-basic-info-service", "ts-admin-order-service", "ts-admin-route-service",
            "ts-admin-travel-service", "ts-admin-user-service", "ts-news-service", "ts-avatar-service",
            "ts-ticket-office-service", "ts-voucher-service", "ts-notification-service"}
SAMPLE = ("code-ts-seat-service-proportion-percent", "code-ts-preserve-service-security-post",
          "code-ts-route-plan-service-from-station-name")
SEED = 5
MEASURE_SECONDS = 120.0

sys.path.insert(0, str(ROOT / "fault_catalog" / "tools"))
import code_faults_app  # noqa: E402


def faults() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for path in sorted(FAULTS.glob("*.yaml")):
        found.extend(yaml.safe_load(path.read_text()))
    return found


ALL = faults()
BY_ID = {fault["id"]: fault for fault in ALL}


def applied(fault: dict[str, Any]) -> dict[str, str]:
    files = code_faults_app.image_sources("trainticket", fault["service"])
    for path, (_before, after) in code_faults_app.edited_files("trainticket", fault).items():
        files[path] = after
    return files


def patch_of(fault: dict[str, Any]) -> str:
    return "".join(code_faults_app.unified_diff(path, before, after)
                   for path, (before, after) in sorted(code_faults_app.edited_files("trainticket", fault).items()))


def measure(fault: dict[str, Any], seed: int = SEED) -> dict[str, Any]:
    """Roll the fault out on a warmed-up twin, then count over MEASURE_SECONDS the entry's failed
    requests, every error line and the fault's own log line (per minute), and run its probe."""
    twin = Twin("trainticket", seed=seed)
    twin.advance_to(120.0)
    service = fault["service"]
    released = twin.release(service, patch=patch_of(fault), change_cause=fault["change_cause"])
    assert released.ok, released.message
    rolled = {"kind": "deployment_ready", "deployment": service}
    deadline = twin.now + 600.0
    while twin.now < deadline:
        twin.advance_to(twin.now + 10.0)
        old = [p for p in twin.cluster.pods.values() if p.deployment == service
               and p.replica_set != twin.cluster.deployments[service].current_rs().name]
        if twin.probe(rolled) and not old:
            break
    start = twin.now
    twin.advance_to(start + MEASURE_SECONDS)
    minutes = MEASURE_SECONDS / 60.0
    entry = [t for t in twin.traces(since=start, limit=100_000)]
    failed = [t for t in entry if t["http_status"] >= 500]
    errors = twin.logs(since=start, level="error", limit=100_000)
    own = twin.logs(service=fault["log"]["service"], since=start, level="error",
                    contains=fault["log"]["message"], limit=100_000)
    probe = code_faults_app.probe_of(fault, False)
    return {"requests_per_min": len(entry) / minutes, "failed_per_min": len(failed) / minutes,
            "errors_per_min": len(errors) / minutes, "own_lines_per_min": len(own) / minutes,
            "probe_healthy": twin.probe(probe), "rolled_after": start - 120.0}


def observable(result: dict[str, Any]) -> bool:
    return result["failed_per_min"] >= 4 or result["own_lines_per_min"] >= 10


@pytest.mark.parametrize("service", sorted(p.parent.name for p in (APP_DIR / "services").glob("*/test_service.py")))
def test_service_builds(service: str) -> None:
    files = code_faults_app.image_sources("trainticket", service)
    assert lint(service, files) == []
    report = run_unit_tests(service, files)
    assert report.failed == 0 and report.passed > 0, report.failures


def test_catalog_shape() -> None:
    ids = [fault["id"] for fault in ALL]
    assert len(ids) == len(set(ids)) and len(ids) >= 44
    assert len({fault["service"] for fault in ALL}) >= 16
    for fault in ALL:
        assert set(fault) == FIELDS, fault["id"]
        assert fault["service"] in DEPLOYMENTS and fault["service"] not in OFF_PATH, fault["id"]
        assert fault["id"].startswith(f"code-{fault['service']}-")
        assert fault["change_cause"].startswith(f"{fault['service']}: ")
        assert fault["exposed_by"] and set(fault["exposed_by"]) <= TASKS, fault["id"]
        # the twin's topology has no edges for hard-coded callee addresses: admission reads a
        # message from the target only
        assert fault["log"]["service"] == fault["service"] and fault["log"]["message"], fault["id"]
        assert fault["probe"]["kind"] == "request" and fault["probe"]["task"] in fault["exposed_by"], fault["id"]


@pytest.mark.parametrize("fault", ALL, ids=[fault["id"] for fault in ALL])
def test_fault_builds(fault: dict[str, Any]) -> None:
    files = applied(fault)
    assert files != code_faults_app.image_sources("trainticket", fault["service"])
    assert lint(fault["service"], files) == []
    report = run_unit_tests(fault["service"], files)
    assert report.failed == 0, report.failures


def test_the_converter_writes_an_entry_per_fault(tmp_path: Path) -> None:
    from catalog_common import Writer

    writer = Writer(tmp_path, {})
    (tmp_path / "patches").mkdir()
    assert code_faults_app.convert("trainticket", writer, build=False) == []
    assert sorted(writer.written) == sorted(BY_ID)
    entry = yaml.safe_load((tmp_path / "code-ts-travel-service-train-by-name.yaml").read_text())
    assert entry["artifact"] == "code:ts-travel-service/travelcore.py"
    assert entry["probe"] == {"kind": "request", "task": "search",
                              "signature": "org.springframework.web.client.HttpClientErrorException: 404 null"}
    diff = (tmp_path / "patches" / "code-ts-travel-service-train-by-name.diff").read_text()
    assert diff.startswith("--- a/travelcore.py\n+++ b/travelcore.py\n")


@pytest.mark.parametrize("fault_id", SAMPLE)
def test_a_rolled_out_fault_fails_the_load(fault_id: str) -> None:
    result = measure(BY_ID[fault_id])
    assert observable(result), result
    assert result["own_lines_per_min"] > 0 and not result["probe_healthy"], result


@pytest.mark.slow
@pytest.mark.parametrize("fault", ALL, ids=[fault["id"] for fault in ALL])
def test_every_rolled_out_fault_fails_the_load(fault: dict[str, Any]) -> None:
    result = measure(fault)
    assert observable(result), result
    assert result["own_lines_per_min"] > 0 and not result["probe_healthy"], result
