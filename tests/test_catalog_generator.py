"""The templated catalog is what `fault_catalog/tools/generate_boutique.py` writes from the twin as
it is: regenerating changes nothing, and what the generator knows of how services fail (dial
failure words, start-up failures, calls a caller only warns about) comes from the twin modules
that define it, so a change there reaches the catalog instead of drifting from a copy."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "fault_catalog" / "tools"
SHIPPED = ROOT / "fault_catalog" / "boutique"


@pytest.fixture
def generator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The generator module, writing into a copy of the shipped catalog."""
    monkeypatch.syspath_prepend(str(TOOLS))
    for name in ("generate_boutique", "twin_knowledge"):
        sys.modules.pop(name, None)
    import generate_boutique

    out = tmp_path / "boutique"
    shutil.copytree(SHIPPED, out)
    monkeypatch.setattr(generate_boutique, "OUT", out)
    monkeypatch.setattr(generate_boutique, "MANIFEST", out / "generated.txt")
    yield generate_boutique
    for name in ("generate_boutique", "twin_knowledge"):
        sys.modules.pop(name, None)


def _texts(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_regenerating_the_catalog_changes_nothing(generator: ModuleType) -> None:
    generator.main()
    assert _texts(generator.OUT) == _texts(SHIPPED)


def test_the_generator_reads_how_services_fail_from_the_twin(generator: ModuleType,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_marathon.twin import rpctexts

    monkeypatch.setitem(rpctexts.DIAL_WORDS["nxdomain"], "go", "no such host here")
    tolerated, unlogged = generator.TOLERATED, generator.UNLOGGED_CALLS  # from WARNED_CALLS
    assert tolerated == {"adservice", "emailservice", "recommendationservice"}
    assert unlogged == {"checkoutservice": {"emailservice"}, "recommendationservice": set()}
    generator.main()
    entry = yaml.safe_load((generator.OUT / "cfg-host-frontend-cart-service.yaml").read_text())
    assert entry["log"]["message"] == "no such host here"
    cleared = yaml.safe_load((generator.OUT / "cfg-cleared-checkoutservice-cart-service.yaml").read_text())
    assert cleared["log"]["message"] == 'environment variable "CART_SERVICE_ADDR" not set'  # checkout's init
