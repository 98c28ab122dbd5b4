"""app.yaml is validated at load time; a mistake names the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_marathon.backends import BackendError, create_backend
from pytest_marathon.twin.appspec import APPS_DIR, AppSpecError, load_app


def _write_variant(tmp_path: Path, mutate) -> Path:
    raw = yaml.safe_load((APPS_DIR / "boutique" / "app.yaml").read_text())
    mutate(raw)
    (tmp_path / "boutique").mkdir()
    (tmp_path / "boutique" / "app.yaml").write_text(yaml.safe_dump(raw))
    return tmp_path


def test_boutique_matches_the_reference() -> None:
    spec = load_app("boutique")
    assert len([d for d in spec.deployments.values() if d.kind != "datastore"]) == 10
    assert spec.deployments["frontend"].env["CART_SERVICE_ADDR"] == "cartservice:7070"
    assert spec.deployments["emailservice"].port == 8080 and spec.services["emailservice"].port == 5000
    assert spec.deployments["recommendationservice"].resources["limits"]["memory"] == "450Mi"
    assert spec.load.users == 10 and sum(t.weight for t in spec.load.tasks) == 19
    assert len({n.zone for n in spec.nodes}) == 2 and len(spec.nodes) == 4


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda raw: raw["deployments"]["cartservice"].pop("port"), "deployments.cartservice.port"),
        (lambda raw: raw["deployments"]["frontend"]["resources"]["limits"].update(memory="lots"),
         "deployments.frontend.resources.limits.memory"),
        (lambda raw: raw["services"][2].update(selector="nothing"), "services[2].selector"),
        (lambda raw: raw["load"]["tasks"]["index"].update(steps=["nowhere"]), "load.tasks.index.steps"),
        (lambda raw: raw["deployments"]["cartservice"]["secret_env"]["REDIS_PASSWORD"].update(key="nokey"),
         "deployments.cartservice.secret_env.REDIS_PASSWORD"),
        (lambda raw: raw["deployments"]["frontend"]["probes"]["liveness"]["httpHeaders"][0].pop("value"),
         "deployments.frontend.probes.liveness.httpHeaders[0].value"),
        (lambda raw: raw["deployments"]["redis-cart"].update(args=["--requirepass", 1]), "deployments.redis-cart.args"),
        (lambda raw: raw["deployments"]["adservice"].update(container=["server"]), "deployments.adservice.container"),
        (lambda raw: raw["services"][0].update(port_name=80), "services[0].port_name"),
        (lambda raw: raw["deployments"]["adservice"].update(shared_code=["nowhere"]), "deployments.adservice.shared_code"),
        (lambda raw: raw["deployments"]["adservice"].update(shared_code=["../boutique"]),
         "deployments.adservice.shared_code"),
        (lambda raw: raw["deployments"]["redis-cart"].update(shared_code=["services"]), "deployments.redis-cart.shared_code"),
    ],
)
def test_schema_errors_name_file_and_field(tmp_path: Path, mutate, field: str) -> None:
    apps = _write_variant(tmp_path, mutate)
    with pytest.raises(AppSpecError) as info:
        load_app("boutique", apps)
    assert str(apps / "boutique" / "app.yaml") in str(info.value)
    assert f"field '{field}'" in str(info.value)


def test_unknown_app_and_backend() -> None:
    with pytest.raises(AppSpecError, match="unknown app 'nope'.*boutique"):
        load_app("nope")
    with pytest.raises(BackendError, match="unknown backend"):
        create_backend("boutique", 0, backend="cluster")


def test_shared_code_is_built_into_each_image_under_the_service_s_own_files() -> None:
    """socialNetwork's four Thrift callers share one client file (app.yaml `shared_code`), as
    upstream compiles src/ClientPool.h into every service; services without it do not hold it."""
    from pytest_marathon.twin.engine import Twin

    twin = Twin("socialnetwork", seed=1)
    spec = twin.spec
    shared = (APPS_DIR / "socialnetwork" / "shared" / "thrift.py").read_text()
    for name in ("compose-post-service", "text-service", "user-timeline-service", "home-timeline-service"):
        files = twin.registry.files(spec.deployments[name].image)
        assert files["thrift.py"] == shared and "service.py" in files
    assert "thrift.py" not in twin.registry.files(spec.deployments["unique-id-service"].image)
