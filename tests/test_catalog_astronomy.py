"""The Astronomy Shop catalog is what `fault_catalog/tools/generate.py --app astronomy` writes from
the app definition and the app's generator data: regenerating changes nothing, the catalog loads,
its direct faults are valid Chaos Toolkit experiments, and the code-fault converter turns edits
written as data into the same patches the boutique's hand-run tool wrote."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from catalog_tools import generator_tools, texts

from pytest_marathon.faults.catalog import load_catalog
from pytest_marathon.faults.chaos import validate_experiment
from pytest_marathon.vocabulary import CATEGORIES

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "fault_catalog" / "astronomy"
SERVICES = ROOT / "pytest_marathon" / "twin" / "apps" / "astronomy" / "services"


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, ModuleType]]:
    """The generator modules, writing into a copy of the shipped astronomy catalog."""
    yield from generator_tools("astronomy", tmp_path, monkeypatch)


def test_regenerating_the_astronomy_catalog_changes_nothing(tools: dict) -> None:
    assert tools["generate"].main(["--app", "astronomy"]) == 0
    assert texts(tools["out"]) == texts(SHIPPED)


def test_the_catalog_loads_and_its_experiments_are_valid() -> None:
    catalog = load_catalog("astronomy", SHIPPED)
    for entry in catalog:
        if entry.experiment is not None:
            validate_experiment(entry.experiment)
    templated = Counter(e.category for e in catalog if e.category != "code")
    assert set(templated) == set(CATEGORIES) - {"code"}
    # what admission keeps of the templates (generator.yaml `excluded` names the rest and why)
    assert sum(templated.values()) >= 160
    none = sum(e.remedy is None for e in catalog)
    assert none <= 0.15 * len(catalog), f"{none} of {len(catalog)} entries have no remedy"


def test_the_full_catalog_covers_every_category() -> None:
    """Issue 17's bar; the code faults arrive with the services' sources."""
    catalog = load_catalog("astronomy", SHIPPED)
    code = [e for e in catalog if e.category == "code"]
    if not code:
        pytest.skip("no code faults yet: fault_catalog/astronomy/code-faults/ arrives with the services")
    assert set(catalog.categories()) == set(CATEGORIES)
    assert len(catalog) >= 220
    assert len(code) >= 40 and len({e.target for e in code}) >= 10


def test_zone_scoped_faults_act_on_the_active_site_only() -> None:
    catalog = load_catalog("astronomy", SHIPPED)
    scoped = [e for e in catalog if e.experiment is not None
              and e.experiment["method"][0]["provider"]["arguments"].get("zone") == "zone-a"]
    kinds = {e.experiment["method"][0]["provider"]["arguments"]["kind"] for e in scoped}
    assert {"node_failure", "network_delay", "partition", "datastore_outage", "memory_hog"} <= kinds
    # one site's replica killed is ridden out by the other (no symptom): pod kills take both
    kills = [e.experiment["method"][0]["provider"]["arguments"] for e in catalog if e.experiment is not None
             and e.experiment["method"][0]["provider"]["arguments"]["kind"] == "pod_kill"]
    assert kills and all("zone" not in k and k["count"] == 2 for k in kills)


def test_start_up_texts_agree_with_the_services_that_exist() -> None:
    """generator.yaml's `startup_failures` is what each service's init stops with (raises, or logs
    before it exits) when the entry removes the variable; checked for every service whose source
    is present."""
    from pytest_marathon.twin.sandbox import compile_service
    from pytest_marathon.twin.sandbox_testing import TestContext

    know = yaml.safe_load((SHIPPED / "generator.yaml").read_text())
    app = yaml.safe_load((SERVICES.parent / "app.yaml").read_text())
    checked = 0
    for svc, startup_texts in sorted(know["startup_failures"].items()):
        folder = SERVICES / svc
        if not (folder / "service.py").is_file():
            continue
        files = {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.is_file()}
        compiled = compile_service(svc, files)
        for var, text in startup_texts.items():
            env = {k: v for k, v in app["deployments"][svc]["env"].items() if k != var}  # the entry removes it
            made: list[TestContext] = []
            with pytest.raises(Exception) as stopped:  # noqa: PT011 - whatever init raises
                compiled.instantiate(lambda env=env, made=made: made.append(TestContext(env=env)) or made[-1])
            said = [str(stopped.value)] + [message for _level, message in made[-1].logs]
            assert any(text in line for line in said), (svc, var, said)
            checked += 1
    if not checked:
        pytest.skip("no astronomy service sources yet")


def test_the_converter_reproduces_the_boutique_patches(tools: dict, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The boutique's code faults, written as data, give byte-identical patches and the same
    entry fields as the hand-run tool that shipped them."""
    import code_faults
    from catalog_common import Writer

    converter = tools["code_faults_app"]
    boutique = ROOT / "fault_catalog" / "boutique"
    faults = [f for f in code_faults.FAULTS if all(old is not None for _p, old, _n in f["edits"])][:6]
    data = [{
        "id": f["id"], "service": f["service"],
        "edits": [{"file": p, "before": old, "after": new} for p, old, new in f["edits"]],
        "change_cause": f["change_cause"], "update": f["update"], "defect": f["defect"],
        "exposed_by": f["exposed_by"], "log": {"service": f["log"][0], "message": f["log"][1]},
        "probe": code_faults.with_signature(f.get("probe", code_faults.PROBE[f["service"]]),
                                            f.get("signature", f["log"][1])),
    } for f in faults]
    folder = tmp_path / "code-faults"
    folder.mkdir()
    (folder / "all.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    monkeypatch.setattr(converter, "fault_files", lambda app: [folder / "all.yaml"])
    monkeypatch.setattr(converter, "services_dir", lambda app: ROOT / "pytest_marathon" / "twin" / "apps" / app / "services")
    out = tmp_path / "out"
    writer = Writer.start(out)
    assert converter.convert("boutique", writer) == []
    assert len(writer.written) == len(faults) > 0
    for fault in faults:
        fid = fault["id"]
        assert (out / "patches" / f"{fid}.diff").read_text() == (boutique / "patches" / f"{fid}.diff").read_text()
        ours = yaml.safe_load((out / f"{fid}.yaml").read_text())
        shipped = yaml.safe_load((boutique / f"{fid}.yaml").read_text())
        shipped.pop("scope", None)
        assert ours == shipped


def test_a_code_fault_that_no_longer_applies_is_reported(tools: dict, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    converter = tools["code_faults_app"]
    (tmp_path / "x.yaml").write_text(yaml.safe_dump([{
        "id": "code-cartservice-gone", "service": "cartservice",
        "edits": [{"file": "service.py", "before": "text that is not there", "after": "x"}],
    }]))
    monkeypatch.setattr(converter, "fault_files", lambda app: [tmp_path / "x.yaml"])
    monkeypatch.setattr(converter, "services_dir", lambda app: ROOT / "pytest_marathon" / "twin" / "apps" / "boutique" / "services")
    problems = converter.convert("boutique", None, build=False)
    assert problems == ["code-cartservice-gone: service.py does not contain the edited text exactly once"]


def test_one_tool_writes_either_app(tools: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    import generate_boutique

    ran = []
    monkeypatch.setattr(generate_boutique, "main", lambda: ran.append("boutique"))
    assert tools["generate"].main(["--app", "boutique"]) == 0
    assert ran == ["boutique"]


def test_a_consumer_group_setting_gives_a_renamed_group_entry(tools: dict, tmp_path: Path) -> None:
    """The group is a setting only where app.yaml names its variable (`consumer.group_env`);
    the shipped app does not yet, so the shipped catalog has no such entry."""
    from catalog_common import Writer

    generate = tools["generate"]
    app = yaml.safe_load((SERVICES.parent / "app.yaml").read_text())
    know = yaml.safe_load((SHIPPED / "generator.yaml").read_text())
    app["deployments"]["accounting"]["consumer"]["group_env"] = "KAFKA_GROUP_ID"
    writer = Writer.start(tmp_path / "out")
    generate.consumer_groups(writer, generate.Knowledge(app, know))
    assert writer.written == ["cfg-group-accounting"]
    entry = yaml.safe_load((tmp_path / "out" / "cfg-group-accounting.yaml").read_text())
    assert entry["injection"] == {"env": {"KAFKA_GROUP_ID": "accounting-v2"}}
    assert entry["probe"]["kind"] == "no_error_logs" and entry["log"]["service"] == "accounting"
