"""The Train Ticket catalog's templated entries are what `fault_catalog/tools/generate.py --app
trainticket` writes from the twin's app.yaml and the app's generator data: regenerating changes
nothing, the catalog loads with valid experiments over every templated category, few entries go
without a remedy, and no template in the tool names a Train Ticket service."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from catalog_tools import TOOLS, generator_tools, texts

from pytest_marathon.backends import create_backend
from pytest_marathon.faults.catalog import load_catalog
from pytest_marathon.faults.chaos import validate_experiment
from pytest_marathon.twin.engine import Twin
from pytest_marathon.vocabulary import CATEGORIES

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "fault_catalog" / "trainticket"
APP = ROOT / "pytest_marathon" / "twin" / "apps" / "trainticket"


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, ModuleType]]:
    """The generator modules, writing into a copy of the shipped trainticket catalog."""
    yield from generator_tools("trainticket", tmp_path, monkeypatch)


def test_regenerating_the_trainticket_catalog_changes_nothing(tools: dict) -> None:
    assert tools["generate"].main(["--app", "trainticket"]) == 0
    assert texts(tools["out"]) == texts(SHIPPED)


def test_the_catalog_loads_over_every_templated_category() -> None:
    catalog = load_catalog("trainticket", SHIPPED)
    for entry in catalog:
        if entry.experiment is not None:
            validate_experiment(entry.experiment)
    templated = Counter(e.category for e in catalog if e.category != "code")
    assert set(templated) == set(CATEGORIES) - {"code"}
    # what admission keeps of the templates (generator.yaml `excluded` names the rest and why)
    assert sum(templated.values()) >= 200
    assert templated["authentication"] >= 10 and templated["database-network"] >= 4
    none = sum(e.remedy is None for e in catalog)
    assert none <= 0.15 * len(catalog), f"{none} of {len(catalog)} entries have no remedy"


def test_store_faults_cover_the_mongo_servers() -> None:
    """Every Mongo a reached service reads has its outage, its access-control change and its
    client's wrong host and port, each observed in the load task through that service."""
    know = yaml.safe_load((SHIPPED / "generator.yaml").read_text())
    catalog = {e.id: e for e in load_catalog("trainticket", SHIPPED)}
    for svc, conf in know["store_settings"].items():
        ids = [f"cfg-store-host-{svc}", f"cfg-store-port-{svc}", f"dep-{conf['store']}-outage",
               f"auth-{conf['store']}-access-control"]
        present = [i for i in ids if i in catalog]
        assert present == [i for i in ids if i not in know["excluded"]], svc
        for entry_id in present:
            assert catalog[entry_id].probe.get("task") == know["task_of"][svc], entry_id


def test_no_template_names_a_service_or_the_app() -> None:
    """A new app is data: the generator's code names no Train Ticket service."""
    app = yaml.safe_load((APP / "app.yaml").read_text())
    names = set(app["deployments"]) | {"trainticket", "train-ticket"}
    for tool in ("generate.py", "catalog_common.py"):
        code = (TOOLS / tool).read_text()
        found = sorted(n for n in names if re.search(rf"\b{re.escape(n)}\b", code))
        assert not found, (tool, found)


def test_unreached_services_get_no_entry() -> None:
    know = yaml.safe_load((SHIPPED / "generator.yaml").read_text())
    unreached = set(know["unreached"])
    assert not [e.id for e in load_catalog("trainticket", SHIPPED) if e.target in unreached]


def test_spring_boot_binds_the_deployment_env_over_application_yml() -> None:
    """shared/spring.py `setting` and app.yaml `port_env: SERVER_PORT`: a wrong Mongo host in the
    Deployment's env is the driver's UnknownHostException in the service's log, and SERVER_PORT
    moves Tomcat while the Service still targets the manifest's port, so callers are refused."""
    twin = Twin("trainticket", seed=5)
    twin.advance_to(0.0)
    assert twin.update_config("ts-station-service", env={"SPRING_DATA_MONGODB_HOST": "ts-station-mongo-primary"}).ok
    assert twin.update_config("ts-route-service", env={"SERVER_PORT": "11188"}).ok
    twin.advance_to(240.0)
    station = twin.logs(service="ts-station-service", since=0.0, level="error", limit=5)
    assert station and "java.net.UnknownHostException: ts-station-mongo-primary" in station[0]["message"]
    # the readiness probe still checks the manifest's port: the moved pod never becomes ready and
    # the rolling update keeps the old one serving (why the catalog has no listener entries)
    (route,) = twin.resources("deployments", "ts-route-service")
    assert route["status"].get("updatedReplicas", 0) == 1 and route["status"].get("readyReplicas") == 1
    assert not twin.logs(service="ts-travel-service", since=0.0, level="error", contains="ts-route-service", limit=5)
    assert not twin.probe({"kind": "request", "task": "search"})


def test_the_topology_has_the_hard_coded_calls() -> None:
    """app.yaml `calls`: the addresses Train Ticket's sources hard-code are the call graph's
    edges (admission looks for a log's emitter on a call path to the fault's target)."""
    edges = {(e["from"], e["to"]) for e in Twin("trainticket", seed=1).topology()["edges"]}
    assert {("ts-ui-dashboard", "ts-travel-service"), ("ts-travel-service", "ts-ticketinfo-service"),
            ("ts-ticketinfo-service", "ts-basic-service"), ("ts-basic-service", "ts-station-service"),
            ("ts-station-service", "ts-station-mongo"), ("ts-voucher-service", "ts-voucher-mysql")} <= edges
    know = yaml.safe_load((SHIPPED / "generator.yaml").read_text())
    for callee, caller in know["caller_of"].items():
        assert (caller, callee) in edges, (caller, callee)


def test_an_unreachable_services_probe_fails_for_its_own_fault_only() -> None:
    """Killing ts-station-service makes ts-basic-service answer 500 to ticketinfo (`-> ts-basic-
    service:15680: HTTP 500`): a probe for basic's own image-tag fault must stay healthy then, or a
    station fault would mask the repair of basic's. Basic unreachable fails it: the call to it is
    refused (Spring's RestTemplate: `Connection refused (Connection refused)`)."""
    entries = {e.id: e for e in load_catalog("trainticket", SHIPPED)}
    basic_probe = entries["dep-image-tag-ts-basic-service"].probe
    readings = {}
    for down in ("ts-station-service", "ts-basic-service"):
        backend = create_backend("trainticket", 1)
        backend.advance_to(60.0)
        assert backend.scale(down, 0).ok
        backend.advance_to(120.0)
        readings[down] = backend.probe(basic_probe)
    assert readings == {"ts-station-service": True, "ts-basic-service": False}
